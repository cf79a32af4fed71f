"""The harness behind other frameworks' interfaces: a gym-style API, OpenEnv environments."""
