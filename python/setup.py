# SPDX-License-Identifier: MIT
"""Builds pure._core: libpure.a from this repository's own sources (CMake + Ninja, as
scripts/deps.sh installs them), then the CPython extension over it. No index is needed:

    python3 -m venv --system-site-packages build/venv
    build/venv/bin/pip install --no-build-isolation ./python

PURE_PY_SANITIZE=1 builds both the library and the extension with ASan + UBSan.
"""
import os
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SANITIZE = os.environ.get("PURE_PY_SANITIZE") == "1"


def pkg_config(*names):
    """The link flags of those pkg-config modules that exist (GnuTLS and Nettle are optional
    to libpure, exactly as its CMakeLists.txt finds them)."""
    have = [n for n in names if subprocess.run(["pkg-config", "--exists", n]).returncode == 0]
    if not have:
        return []
    return subprocess.check_output(["pkg-config", "--libs", *have], text=True).split()


class BuildWithLibpure(build_ext):
    def run(self):
        bdir = os.path.abspath(os.path.join(self.build_temp, "libpure" + ("-asan" if SANITIZE else "")))
        cfg = ["cmake", "-S", ROOT, "-B", bdir, "-G", "Ninja", "-DPURE_BUILD_TESTS=OFF",
               "-DCMAKE_BUILD_TYPE=RelWithDebInfo"]
        if SANITIZE:
            cfg.append("-DPURE_SANITIZE=ON")
        subprocess.check_call(cfg, stdout=subprocess.DEVNULL)
        subprocess.check_call(["ninja", "-C", bdir, "pure_static"], stdout=subprocess.DEVNULL)
        libs = pkg_config("libcrypto") + pkg_config("gnutls") + pkg_config("nettle", "hogweed")
        for ext in self.extensions:
            ext.extra_objects = [os.path.join(bdir, "libpure.a")]
            ext.extra_link_args = libs + (["-fsanitize=address,undefined"] if SANITIZE else [])
            if SANITIZE:
                ext.extra_compile_args += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer",
                                           "-fno-sanitize-recover=undefined"]
        super().run()


setup(
    name="pure",
    version="0.2.0",
    description="Pure: secure, reliable messages over UDP, for asyncio",
    packages=["pure"],
    package_data={"pure": ["py.typed", "*.pyi"]},
    ext_modules=[
        Extension(
            "pure._core",
            sources=["src/module.c", "src/ctx.c", "src/events.c", "src/link.c"],
            include_dirs=[os.path.join(ROOT, "include"), os.path.join(ROOT, "src", "io"),
                          os.path.join(HERE, "src")],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wshadow", "-Wno-unused-parameter",
                                "-Wno-missing-field-initializers", "-Wno-cast-function-type"],
        )
    ],
    cmdclass={"build_ext": BuildWithLibpure},
    python_requires=">=3.9",
)
