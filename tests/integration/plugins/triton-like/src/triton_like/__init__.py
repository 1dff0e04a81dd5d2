"""A stand-in for triton: a package with backends registered in its own group."""
