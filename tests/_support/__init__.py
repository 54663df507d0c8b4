"""Shared test helpers: toy domains, scripted agents and users, fake and loopback model servers."""
