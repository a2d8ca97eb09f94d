"""Recorded replay scenarios for `metis run` (cassette YAML plus a workspace).

Load them with `metis_runtime.providers.load_scenario`; list them with
`metis_runtime.providers.builtin_scenarios()`.
"""
