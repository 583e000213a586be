"""Generator of the synthetic deepagents traces in traces/ (a dev tool, not part of ctxlab).

It drives the *real* `deepagents.create_deep_agent` stack (middleware, file tools, tool-result
offload, summarisation, the `task` subagent) with a scripted chat model, records it with the
*real* `LangChainTracer`, and keeps the payloads the tracer hands to the LangSmith client
instead of sending them. Only the model is fake; every tool really runs on a temporary project.
Wall-clock times, random ids and host details are rewritten afterwards, so that two runs give
identical files. One module per job:

* `project`: the `orderflow` project the agent works on;
* `tools`: the custom `run_tests` and `git_diff` tools and the text they print;
* `script`, `scenarios`: the scripted turns, and the two sessions built from them;
* `model`: the scripted chat model;
* `recording`, `encoding`: the offline LangSmith recording and its JSON encoding;
* `output`: normalisation of the recording and the `.jsonl.xz` files;
* `__main__`: the command, `python -m traces.samples [OUTPUT_DIR]`.
"""
