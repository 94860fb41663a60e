"""The grokking-time law: tau_grok vs weight decay and vs modulus (SPEC 2.6, last bullets)."""
