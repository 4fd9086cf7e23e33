#!/usr/bin/env python3
"""make-seeds.py — writes the structured seeds of the fuzz targets'
corpora (tests/fuzz/corpus/<target>/seed-*): ABI programs in the byte code
fuzz_abi.c reads, environment sets for fuzz_env.c, trees for
fuzz_candidates.c, dumps and logs for fuzz_analyze.c (from
tests/analyze/data). The ELF seeds are small plugins built by the commands in
tests/fuzz/corpus/elf/README. Run from the repository root; libFuzzer adds
what it finds to its working copy under build-fuzz/, never here."""
import os
import struct

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    os.makedirs(os.path.join(HERE, target), exist_ok=True)
    with open(os.path.join(HERE, target, "seed-" + name), "wb") as f:
        f.write(bytes(data))


# ---- fuzz_abi: op byte % 16 selects init (0-1), start (2-5), record (6-9),
# stop (10-12), dump (13-14), finalize (15); operands follow (fuzz_abi.c).
OWN_PID = 0x00  # start's `sel` bits 4..6 != 0x70: this process's pid


def init(ctx, version, flags=2, hsh=0x1234, nranks=4, rank=0):
    return [0, ctx, (version - 1), flags, hsh >> 8, hsh & 0xff, nranks, rank, 7]


def descr(nsteps=8, is_send=1, comm=0, opcount=0, raw=0, step=0):
    d = bytearray(88)
    struct.pack_into("<i", d, 16, 0)            # rank
    struct.pack_into("<B", d, 28, 1)            # channel
    struct.pack_into("<i", d, 32, 1)            # peer
    struct.pack_into("<i", d, 36, nsteps)       # nSteps
    struct.pack_into("<i", d, 40, 65536)        # chunkSize
    struct.pack_into("<i", d, 44, is_send)      # isSend
    struct.pack_into("<Q", d, 48, comm)         # commHash (v6)
    struct.pack_into("<q", d, 56, opcount)      # opCount (v6)
    struct.pack_into("<i", d, 84, raw)          # rawProxyNsteps (v6)
    if step:
        struct.pack_into("<i", d, 24, step)     # proxyStep.step
    return list(d)


def start_op(ctx, nsteps=8, rccl=True, opcount=0):
    sel = 0 | (0 if rccl else 0x80)  # ProxyOp, own pid
    d = descr(nsteps, 1, 0x1234 if rccl else 0, opcount, nsteps if rccl else 0)
    return [2, ctx] + d + [sel, 0, 0, 0]  # parent: k=0 -> NULL; hp, descr kept


def start_step(ctx, parent_index, step):
    d = descr(step=step)
    return [2, ctx] + d + [3, 1, parent_index, 0, 0]


def record(handle_index, state, kind=0, value=0, flags=0):
    sel = {31: 0, 19: 1}.get(state, 2 | ((state % 24) << 2))
    a = bytearray(24)
    struct.pack_into("<BBHq", a, 0, kind, 0, flags, value)
    return [6, 5, 3, handle_index, sel] + list(a)


def stop(handle_index):
    return [10, 5, 3, handle_index]


def dump(ctx):
    return [13, ctx]


def fin(ctx):
    return [15, ctx]


def abi_seeds():
    # RCCL: op, in progress, per-step counters to completion, dumps.
    p = init(0, 6) + start_op(0, nsteps=4) + record(0, 19)
    for s in range(1, 5):
        for kind in (0, 3, 5, 7):
            p += record(0, 31, kind, s)
    p += dump(0) + stop(0) + dump(0) + fin(0)
    write("abi", "rccl-op", p)
    # Stock NCCL 2.29 (zeroed RCCL fields): op, steps driving the counters.
    p = init(1, 6) + start_op(1, nsteps=4, rccl=False) + record(0, 19)
    for s in range(4):
        p += start_step(1, 0, s) + record(1 + 2 * s, 9) + stop(1 + 2 * s)
    p += dump(1) + fin(1)
    write("abi", "stock-steps", p)
    # Every version's init, an op each, cross-context steps, finalize order.
    p = []
    for v in range(1, 7):
        p += init(v % 4, v) + start_op(v % 4, nsteps=2, rccl=(v == 6))
        p += fin((v + 1) % 4)
    p += start_step(0, 1, 0) + dump(0) + dump(1) + dump(2) + dump(3)
    write("abi", "versions", p)
    # Pressure: more ops than the 16 slots, some never registered.
    p = init(2, 6)
    for i in range(24):
        p += start_op(2, nsteps=2, opcount=i)
        if i % 3:
            p += record(i, 19)
    p += dump(2) + fin(2)
    write("abi", "pressure", p)


# ---- fuzz_env: NUL-separated values (fuzz_env.c field order).
def env_seeds():
    # MAX_OPS, CLOCK, STALL_MS, DUMP_INTERVAL_MS, DUMP_SIGNAL, DUMP_DIR,
    # PROFILER_PLUGIN, RCCL_ENABLE, HOME, LD path, DEBUG, NET_PLUGIN,
    # ENV_PLUGIN, host, config file contents
    fields = lambda *v: "\0".join(v).encode()
    write("env", "defaults", fields("4096", "tsc", "10000", "0", "", "", "", "", "", "", "0",
                                    "", "", "rccl"))
    write("env", "bad", fields("4k", "sundial", "-1", "1e3", "KILL", "/nonexistent", "/none/lib.so",
                               "on", "/tmp", "::", "1", "ib", "x", "nccl-9.9",
                               "NCCL_PROFILER_PLUGIN=x\n#c\nRCCL_ENABLE_PROXY_TRACE=1\n"))
    write("env", "limits", fields("1048577", "monotonic", "86400001", "86400000", "SIGusr2",
                                  "/tmp/d", "proxytrace", "0x10", "", "/lib", "",
                                  "libnccl-net.so,none", "", "nccl-2.27.3",
                                  "\x01NCCL_PROFILER_PLUGIN=none\r\n"))
    write("env", "versions", fields("16", "counter", "0", "5", "64", "", "STATIC", "-1", "/", "",
                                    "", "", "/env.so", "2.28.9", "1.10.2\n"))


# ---- fuzz_candidates: a tree program, then the probe's settings.
def cand_seeds():
    # mkdir lib, put versioned plugins in it, a loop, HOME set, value unset
    p = [6,  0, 0, 0,            # mkdir root/lib
         1, 1, 3,                # file lib/<stem>.1 (good)
         1, 1, 5,                # file lib/<stem>.1.10.2
         1, 1, 6,                # file lib/<stem>.1.9
         2, 1, 7,                # file lib/<stem>.2 (major 2)
         4, 1, 4, 0]             # symlink lib/<stem>.1.2 -> itself
    p += [4, 1, 0, 0, 1]         # settings: value unset, HOME=lib, no LD path
    write("candidates", "home", p)
    p = [3, 0, 0, 14, 3, 0, 15, 100, 5, 1, 0, 7]   # truncated files, a world-writable dir
    p += [3, 1, 14, 1, 0, 1, 0, 5]
    write("candidates", "value", p)


# ---- fuzz_analyze: a first byte (the slow-factor choice), then up to four
# NUL-separated files: JSON lines of the ring-stall example, legacy text,
# the same behind the host logger's prefixes.
def legacy(prefix, opc, rank, peer, d, po, ke, trans, recvd, done, ns=56):
    status = "POSTING" if po < ns and po < done + 8 else "WAITING_GPU"
    return ("%screateT:1750000000100, lastT:1750000000200, postT:1750000000150, sendT:0, cntNm:7, "
            "<99:%d:0>, [fu,pr,pa,tb,ck]:4,2,1,0,1048576, %d->%d(%s), chan:0, status:%s, ns:%d, "
            "nb:524288, po:%d, ke:%d, tail/h:0, recvT:0, connSz/h:-1, trans:%d, flushed:0, recvd:%d, "
            "done:%d\n" % (prefix, opc, rank, peer, d, status, ns, po, ke, trans, recvd, done))


def analyze_seeds():
    here = os.path.dirname(os.path.abspath(__file__))
    ring = os.path.join(here, "..", "analyze", "data", "ring-stall")
    files = sorted(os.listdir(ring))
    jsonl = [open(os.path.join(ring, f), "rb").read() for f in files]
    write("analyze", "ring-jsonl", b"\x00" + b"\x00".join(jsonl))
    rows = [(6, 0, 3, "R", 14, 0, 14, 14, 6), (6, 1, 2, "S", 18, 10, 10, 0, 10),
            (6, 2, 1, "R", 18, 0, 10, 10, 10), (6, 3, 0, "S", 22, 16, 14, 0, 14)]
    text = []
    for r, row in enumerate(rows):
        for prefix in ("", "node%d:%d:%d [%d] ncclProfilerProxyTraceDump:14 NCCL WARN "
                       % (r // 2, 1000 + r, 2000 + r, r % 2)):
            t = prefix + "commDump for all active ops mapSizeMB:0.01\n" + legacy(prefix, *row)
            text.append(t)
    write("analyze", "ring-text", b"\x01" + "".join(text[0::2]).encode())
    write("analyze", "ring-logs", b"\x02" + "\x00".join(text[1::2]).encode())
    write("analyze", "mixed", b"\x03" + jsonl[0] + b"\x00" + text[3].encode() +
          b"\x00{\"type\":\"dump\",\"schema\":2}\n\x00createT:1, cut")
    # Hostile strings in every string field the reports print: bytes that
    # are not UTF-8, and JSON escapes of ESC (a terminal sequence), NUL and
    # U+2028, in rank 1's dump (its GPU is the culprit, so its host and its
    # op's coll reach the verdict); each seed one field, one kind.
    hostile = {"bytes": b"n\xff\xfe\xffde\xc2\x85\xed\xa0\x80",
               "esc": b"\\u001b]0;x\\u0007\\u001b[2Jnode",
               "nul": b"a\\u0000b",
               "u2028": b"x\\u2028y\\u202e<script>"}
    for field in ("host", "commName", "coll", "hostLib", "clock", "trigger"):
        for kind, bad in hostile.items():
            files = [j.replace(b'"%s":"' % field.encode(), b'"%s":"' % field.encode() + bad) if i == 1 else j
                     for i, j in enumerate(jsonl)]
            assert files[1] != jsonl[1], field
            write("analyze", "hostile-%s-%s" % (field, kind), bytes([len(field)]) + b"\x00".join(files))


abi_seeds()
env_seeds()
cand_seeds()
analyze_seeds()
