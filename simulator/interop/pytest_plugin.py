"""The tausim pytest plugin (in progress)."""
