"""The policy framework: the contract a policy implements and how policies are found.

The policy base class and config model (``contract``), the spec the registry
keeps per policy, the pluggy hook specifications (``hookspecs``), finding and
loading plugins (``plugins``), the registry (``registry``) and strict config
validation (``config``).
"""
