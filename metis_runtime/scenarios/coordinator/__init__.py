"""Per-agent cassettes of the `coordinator` replay scenario (`../coordinator.yaml`
names them under `agents:`). Not scenarios of their own: `builtin_scenarios()`
lists only the YAML files one folder up."""
