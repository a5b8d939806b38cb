"""numpy_mtp: the numpy float64 MTP block and row lifecycle behind numpy_backend.py, written from the spec
(conformance/spec/mtp-behavior.md, cited as §N) and conformance/SPEC.md, not from the Java reference."""
