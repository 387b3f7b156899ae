"""The engine doctor's parts; ``kvhash.doctor`` is its public face.

- ``findings``: the finding type, every finding id, the report collecting them
- ``cmdline``: reading an engine command line (environment prefix, engine, flags)
- ``configfile``: reading the engine config files some flags name
- ``common``: rules and value readers that more than one engine uses
- ``vllm``, ``sglang``, ``trtllm``: the rules of each engine
- ``cli``: ``python -m kvhash doctor``
- ``live``: ``python -m kvhash doctor --events``, through the kvrouter binary
"""
