"""Drivers that start the workload as a host process tree of their own: native (the
baseline, base of the others), bwrap and nspawn (namespaces around it) and wasmtime (a
WebAssembly runtime as the process). No imports here: the registry imports drivers by
module."""
