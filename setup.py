"""The compiled core (``core/``, Rust) as the optional extension module ``neardup._core``.

Everything else is in pyproject.toml. ``optional=True``: where no Rust toolchain is found the
build goes on without it, and neardup runs on its pure-Python reference
(:mod:`neardup.stream.core` says which is in use; ``neardup --version`` names it).
"""

from setuptools import setup
from setuptools_rust import Binding, RustExtension

setup(
    rust_extensions=[
        RustExtension(
            "neardup._core",
            path="core/Cargo.toml",
            binding=Binding.PyO3,
            optional=True,
            debug=False,  # an editable install (make install, pip install -e) optimises it too
        )
    ],
    # abi3 (core/Cargo.toml's pyo3 feature abi3-py311): one wheel for every CPython >= 3.11
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
