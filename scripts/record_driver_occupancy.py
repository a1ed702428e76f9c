"""Record the CUDA driver's own occupancy answers on a real GPU (ground truth for tests).

For probe kernels with many register counts (PTX with `.maxnreg`, compiled by
the ptxas in triton's wheel) and some with static shared memory, asks
``cuOccupancyMaxActiveBlocksPerMultiprocessor`` for every (block size, dynamic
shared memory, carveout) in a grid, the way Triton's launcher configures a
kernel (MAX_DYNAMIC_SHARED_SIZE_BYTES opted in to the device maximum). Writes

    <out>/driver_occupancy.csv.gz   regs,static_smem,threads,dyn_smem,carveout,blocks,status
    <out>/device_attributes.json    the device attributes a spec needs

Needs only libcuda (ctypes), triton's ptxas and this checkout; no torch. Usage on the GPU:

    PYTHONPATH=. python3 scripts/record_driver_occupancy.py --out $OUT
"""

from __future__ import annotations

import argparse
import ctypes
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

PROBE_REGS = (24, 25, 31, 32, 33, 40, 48, 56, 57, 64, 72, 80, 88, 96, 104, 112, 120, 128, 129,
              136, 152, 168, 184, 200, 216, 232, 248, 255)
STATIC_PROBES = ((64, 4096), (128, 16384), (40, 40000), (255, 48 * 1024 - 16))  # (maxnreg, static bytes)
THREADS = (1, 32, 33, 64, 96, 100, 128, 160, 192, 224, 256, 288, 320, 384, 416, 512, 544, 640, 768,
           896, 992, 1024)
DYN_SMEM = (0, 1, 127, 128, 129, 1024, 3000, 7168, 8192, 16384, 24576, 32768, 40000, 48 * 1024,
            48 * 1024 + 1, 65536, 81920, 100000, 101376, 101377, 114688, 131072, 150000, 163840,
            166912, 166913, 196608, 200000, 220000, 232448, 232449)
CARVEOUTS = (-1, 0, 1, 5, 10, 25, 33, 50, 66, 75, 90, 100)

from occmodel.detect import DEVICE_ATTRIBUTES  # noqa: E402  (CUdevice_attribute numbers)
FUNC_MAX_THREADS, FUNC_SHARED, FUNC_NUM_REGS, FUNC_LOCAL = 0, 1, 4, 3
FUNC_MAX_DYN_SHARED, FUNC_CARVEOUT = 8, 9


def probe_ptx(maxnreg: int, static_smem: int, cc: str) -> str:
    """A kernel whose 300 loaded values stay live, so ptxas uses all `maxnreg` registers."""
    k = 300
    out = [".version 8.0", f".target {cc}", ".address_size 64"]
    if static_smem:
        out.append(f".shared .align 16 .b8 sbuf[{static_smem}];")
    out += [f".visible .entry occ_probe(.param .u64 p) .maxnreg {maxnreg}", "{",
            f"  .reg .f32 f<{k}>; .reg .f32 s<4>; .reg .u64 rd<4>; .reg .u32 r<4>;",
            "  ld.param.u64 rd1, [p]; cvta.to.global.u64 rd2, rd1;"]
    out += [f"  ld.global.f32 f{i}, [rd2+{4 * i}];" for i in range(k)]
    out.append("  mov.f32 s0, 0f00000000; mov.f32 s1, 0f3F800000;")
    out += [f"  fma.rn.f32 s0, s0, f{i}, f{i};" for i in reversed(range(k))]
    out += [f"  fma.rn.f32 s1, s1, f{i}, s0;" for i in range(k)]
    out.append("  st.global.f32 [rd2], s1;")
    if static_smem:
        out.append("  mov.u32 r1, sbuf; st.shared.f32 [r1], s1; ld.shared.f32 s2, [r1+4]; "
                   "st.global.f32 [rd2+4], s2;")
    out += ["  ret;", "}"]
    return "\n".join(out) + "\n"


def ptxas_path() -> str:
    import importlib.util
    spec = importlib.util.find_spec("triton")
    return os.path.join(os.path.dirname(spec.origin), "backends", "nvidia", "bin", "ptxas")


class Driver:
    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.check(self.lib.cuInit(0), "cuInit")
        self.dev = ctypes.c_int()
        self.check(self.lib.cuDeviceGet(ctypes.byref(self.dev), 0), "cuDeviceGet")
        self.ctx = ctypes.c_void_p()
        self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), self.dev), "ctx")
        self.check(self.lib.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")

    @staticmethod
    def check(rc: int, what: str) -> None:
        if rc != 0:
            raise RuntimeError(f"{what} failed with CUresult {rc}")

    def attribute(self, number: int) -> int:
        v = ctypes.c_int()
        self.check(self.lib.cuDeviceGetAttribute(ctypes.byref(v), number, self.dev), f"attr {number}")
        return v.value

    def name(self) -> str:
        buf = ctypes.create_string_buffer(256)
        self.lib.cuDeviceGetName(buf, 256, self.dev)
        return buf.value.decode()

    def load(self, cubin: bytes) -> ctypes.c_void_p:
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.lib.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(cubin)), "cuModuleLoadData")
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(fn), mod, b"occ_probe"), "cuModuleGetFunction")
        return fn

    def func_attr(self, fn, number: int) -> int:
        v = ctypes.c_int()
        self.check(self.lib.cuFuncGetAttribute(ctypes.byref(v), number, fn), f"func attr {number}")
        return v.value

    def occupancy(self, fn, threads: int, dyn: int) -> tuple[int, int]:
        n = ctypes.c_int(-1)
        rc = self.lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(n), fn, threads,
                                                                  ctypes.c_size_t(dyn))
        return n.value, rc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    drv = Driver()
    attrs = {name: drv.attribute(num) for name, num in DEVICE_ATTRIBUTES.items()}
    cc = f"sm_{attrs['compute_capability_major']}{attrs['compute_capability_minor']}"
    version = ctypes.c_int()
    drv.lib.cuDriverGetVersion(ctypes.byref(version))
    info = {"device": drv.name(), "driver_api_version": version.value, "attributes": attrs}
    optin = attrs["max_shared_memory_per_block_optin"]

    probes = [(r, 0) for r in PROBE_REGS] + list(STATIC_PROBES)
    rows, t0 = [], time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for maxnreg, static in probes:
            ptx, cubin = os.path.join(tmp, "p.ptx"), os.path.join(tmp, "p.cubin")
            with open(ptx, "w") as f:
                f.write(probe_ptx(maxnreg, static, cc))
            subprocess.run([ptxas_path(), f"-arch={cc}", "-O3", ptx, "-o", cubin], check=True,
                           capture_output=True)
            fn = drv.load(open(cubin, "rb").read())
            regs, static_attr = drv.func_attr(fn, FUNC_NUM_REGS), drv.func_attr(fn, FUNC_SHARED)
            drv.check(drv.lib.cuFuncSetAttribute(fn, FUNC_MAX_DYN_SHARED, optin - static_attr), "max dyn")
            for carve in CARVEOUTS:
                drv.check(drv.lib.cuFuncSetAttribute(fn, FUNC_CARVEOUT, carve), f"carveout {carve}")
                for threads in THREADS:
                    for dyn in DYN_SMEM:
                        blocks, rc = drv.occupancy(fn, threads, dyn)
                        rows.append((regs, static_attr, threads, dyn, carve, blocks, rc))
            info.setdefault("probes", []).append({"maxnreg": maxnreg, "static_request": static,
                                                  "num_regs": regs, "shared_size_bytes": static_attr,
                                                  "max_threads_per_block": drv.func_attr(fn, FUNC_MAX_THREADS)})
    info["rows"], info["seconds"] = len(rows), round(time.time() - t0, 2)
    with gzip.open(os.path.join(args.out, "driver_occupancy.csv.gz"), "wt") as f:
        f.write("regs,static_smem,threads,dyn_smem,carveout,blocks,status\n")
        f.writelines(",".join(map(str, r)) + "\n" for r in rows)
    with open(os.path.join(args.out, "device_attributes.json"), "w") as f:
        json.dump(info, f, indent=1)
    print(json.dumps({k: v for k, v in info.items() if k != "probes"}, indent=1))
    print(f"{len(rows)} rows; statuses: {sorted(set(r[-1] for r in rows))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
