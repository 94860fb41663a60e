"""The grokking-time law: tau_grok vs weight decay and vs modulus (ACE paper; docs/ace.md)."""
