"""Domains shipped with tausim; each is registered under the entry point group ``tausim.domains``."""
