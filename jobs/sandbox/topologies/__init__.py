"""The sandbox's fleet topologies (YAML), shipped as package data."""
