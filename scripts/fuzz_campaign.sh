#!/usr/bin/env bash
# A bounded fuzz campaign against the `epprof` binary (issue 15): mutated
# traces through report (text and html), validate, diff and merge, and
# mutated models through `epprof run`. Not a test: it takes minutes, and it
# prints one table of outcomes per input family:
#
#   family         tried  clean error  exit 0  crash  hang  clobber
#
#   clean error  exit status 1 or 2 with an "epprof ..." message (or, for
#                validate, the list of violations)
#   crash        killed by a signal (SIGSEGV, SIGFPE, SIGABRT, ...), or an
#                exit status other than 0, 1, 2 (a sanitizer's, say)
#   hang         still running at the time limit (killed by timeout)
#   clobber      a file in the command's directory other than its output
#                changed, or a temporary was left behind
#
# Every process runs under `timeout -s KILL` and `prlimit --as` (a memory
# limit), in its own directory. Inputs that crash or hang are kept under
# --keep DIR for a regression test. Needs python3 (standard on Debian).
#
# usage: scripts/fuzz_campaign.sh [--cli PATH] [--traces N] [--models N]
#            [--jobs N] [--timeout S] [--mem MIB] [--seed N] [--keep DIR]
# defaults: build/bin/epprof, 5000 trace commands, 5000 models, nproc jobs,
#           10 s, 2048 MiB, seed 1, keep in ./fuzz-findings
# Exit status: 0 when there was no crash, hang or clobber, 1 otherwise.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cli="$root/build/bin/epprof" traces=5000 models=5000 jobs=$(nproc) limit=10 mem=2048 seed=1 keep="$PWD/fuzz-findings"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cli) cli=$2; shift 2 ;;
    --traces) traces=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --timeout) limit=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fuzz_campaign: unknown option '$1'" >&2; exit 2 ;;
  esac
done
command -v python3 >/dev/null || { echo "fuzz_campaign: python3 is needed" >&2; exit 2; }
command -v prlimit >/dev/null || { echo "fuzz_campaign: prlimit (util-linux) is needed" >&2; exit 2; }
[[ -x "$cli" ]] || { echo "fuzz_campaign: no epprof binary at '$cli' (build first, or --cli PATH)" >&2; exit 2; }
cli=$(realpath "$cli") keep=$(realpath -m "$keep")  # the commands run in their own directories
models_dir=$(cd "$(dirname "$cli")/../models" 2>/dev/null && pwd) || {
  echo "fuzz_campaign: no models directory beside '$cli'" >&2; exit 2; }

exec python3 - "$cli" "$models_dir" "$traces" "$models" "$jobs" "$limit" "$mem" "$seed" "$keep" <<'PY'
import concurrent.futures as cf, copy, hashlib, json, os, random, shutil, signal, subprocess, sys, tempfile

cli, models_dir, n_traces, n_models, jobs, limit, mem, seed, keep = sys.argv[1:]
n_traces, n_models, jobs, limit, mem, seed = int(n_traces), int(n_models), int(jobs), int(limit), int(mem), int(seed)
work = tempfile.mkdtemp(prefix="epprof-fuzz-")
rng = random.Random(seed)

def run(args, cwd):
    """Runs epprof ARGS in cwd under the limits; returns (outcome, detail)."""
    cmd = ["timeout", "-s", "KILL", str(limit), "prlimit", f"--as={mem << 20}", cli] + args
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = p.stderr.decode("utf-8", "replace") + p.stdout.decode("utf-8", "replace")[-2000:]
    if p.returncode in (126, 127):  # timeout or prlimit could not run epprof: the campaign is void
        raise SystemExit(f"fuzz_campaign: cannot execute {cli}: {err.strip()} (rebuilt while the campaign ran?)")
    if p.returncode in (124, 137, -signal.SIGKILL):  # timeout re-raises the KILL it sent on itself
        return "hang", err[-300:]
    if p.returncode < 0 or p.returncode > 2:
        return "crash", f"status {p.returncode}: {err[-300:]}"
    if p.returncode == 0:
        return "exit 0", ""
    # validate lists violations on stdout; every other error names "epprof <command>"
    ok = "epprof" in err or "violation" in err
    return ("clean error", "") if ok else ("crash", f"status {p.returncode}, no message: {err[-300:]}")

def digest(d):
    out = {}
    for name in os.listdir(d):
        path = os.path.join(d, name)
        out[name] = hashlib.sha1(open(path, "rb").read()).hexdigest() if os.path.isfile(path) else "?"
    return out

def job(family, index, inputs, args, outputs):
    """One command in its own directory: inputs {name: bytes}; outputs the
    names it may write. Returns (family, outcome, detail, kept path)."""
    d = os.path.join(work, f"{family.replace('/', '_')}-{index}")
    os.makedirs(d)
    for name, data in inputs.items():
        open(os.path.join(d, name), "wb").write(data)
    before = digest(d)
    outcome, detail = run(args, d)
    after = digest(d)
    changed = [n for n in set(before) | set(after) if n not in outputs and before.get(n) != after.get(n)]
    if outcome in ("exit 0", "clean error") and changed:
        outcome, detail = "clobber", "changed: " + ", ".join(sorted(changed))
    kept = ""
    if outcome not in ("exit 0", "clean error"):
        kept = os.path.join(keep, f"{family.replace('/', '_')}-{index}")
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(d, kept)
        open(os.path.join(kept, "command"), "w").write(" ".join(["epprof"] + args) + "\n" + detail + "\n")
    shutil.rmtree(d, ignore_errors=True)
    return family, outcome, detail, kept

# ---- seeds -----------------------------------------------------------------
def seed_trace(args, name):
    d = os.path.join(work, "seed")
    os.makedirs(d, exist_ok=True)
    subprocess.run([cli] + args + ["--output", os.path.join(d, name)], cwd=d, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return open(os.path.join(d, name), "rb").read()

model_seeds = {n: open(os.path.join(models_dir, n), "rb").read() for n in sorted(os.listdir(models_dir)) if n.endswith(".onnx")}
trace_seeds = [seed_trace(["run", os.path.join(models_dir, "mlp.onnx"), "--runs", "3", "--no-table"], "mlp.json"),
               seed_trace(["run", os.path.join(models_dir, "cnn.onnx"), "--runs", "2", "--no-table"], "cnn.json"),
               seed_trace(["demo", "--events", "20"], "demo.json")]

# ---- byte-level mutations ----------------------------------------------------
def mutate_bytes(data):
    b = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 4, 16])):
        op = rng.randrange(6)
        i = rng.randrange(len(b)) if b else 0
        if op == 0 and b: b[i] ^= 1 << rng.randrange(8)
        elif op == 1 and b: b[i] = rng.choice([0, 0xff, 0x7f, 0x80, ord('"'), ord('\\'), ord('{'), ord(']')])
        elif op == 2: b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        elif op == 3: del b[i:i + rng.randrange(1, 64)]
        elif op == 4: b = b[:i]
        else:
            j = rng.randrange(len(b)) if b else 0
            b[i:i] = b[j:j + rng.randrange(1, 256)]
    return bytes(b)

# ---- structure-aware: protobuf wire format (no ONNX schema needed) ---------
def varint(b, i):
    v = s = 0
    while True:
        if i >= len(b): raise ValueError
        c = b[i]; i += 1
        v |= (c & 0x7f) << s; s += 7
        if not c & 0x80: return v, i
        if s > 70: raise ValueError

def enc_varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        c = v & 0x7f; v >>= 7
        out.append(c | (0x80 if v else 0))
        if not v: return bytes(out)

def parse(b, depth=0):
    """Fields [(number, type, value)]; a length-delimited value that parses as
    a message is a list of fields. ValueError if b is not a message."""
    fields, i = [], 0
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if num == 0: raise ValueError
        if wt == 0: v, i = varint(b, i)
        elif wt == 1: v, i = b[i:i + 8], i + 8
        elif wt == 5: v, i = b[i:i + 4], i + 4
        elif wt == 2:
            n, i = varint(b, i)
            if i + n > len(b): raise ValueError
            raw = b[i:i + n]; i += n
            v = raw
            if depth < 12 and n:
                try: v = parse(raw, depth + 1)
                except ValueError: pass
        else: raise ValueError
        fields.append([num, wt, v])
    if i != len(b): raise ValueError
    return fields

def serialize(fields):
    out = bytearray()
    for num, wt, v in fields:
        out += enc_varint(num << 3 | wt)
        if wt == 0: out += enc_varint(v)
        elif wt == 2:
            raw = serialize(v) if isinstance(v, list) else v
            out += enc_varint(len(raw)) + raw
        else: out += v
    return bytes(out)

def all_fields(fields, acc):
    for f in fields:
        acc.append((fields, f))
        if isinstance(f[2], list): all_fields(f[2], acc)
    return acc

INTERESTING = [0, 1, 2, 3, -1, -2, -5, 7, 99, 255, 1 << 31, (1 << 31) - 1, 1 << 32, (1 << 63) - 1, -(1 << 63)]

def mutate_model(data):
    tree = parse(data)
    for _ in range(rng.choice([1, 1, 2, 3])):
        acc = all_fields(tree, [])
        parent, f = rng.choice(acc)
        op = rng.randrange(6)
        if op == 0 and f[1] == 0: f[2] = rng.choice(INTERESTING)                     # a dim, stride, type, index...
        elif op == 1 and f[1] == 2 and isinstance(f[2], list) and f[2]:               # packed ints arrive as bytes
            parent.append(copy.deepcopy(f))                                           # duplicate (extra input, node...)
        elif op == 2: parent.remove(f)                                                # drop a field
        elif op == 3 and f[1] == 2 and not isinstance(f[2], list):
            raw = bytearray(f[2])
            if raw and rng.random() < 0.5: raw[rng.randrange(len(raw))] = rng.choice([0, ord('/'), ord('.'), 0xff])
            else: raw += rng.choice([b"\x00", b"/../x", b"\xff", b"x" * 300])
            f[2] = bytes(raw)                                                         # names, raw_data, packed ints
        elif op == 4 and f[1] == 2 and not isinstance(f[2], list) and len(f[2]) > 1:
            f[2] = f[2][:rng.randrange(len(f[2]))]                                    # short tensor data
        else:
            other = copy.deepcopy(rng.choice(acc)[1])  # a copy: never a field inside itself
            parent.insert(rng.randrange(len(parent) + 1), other)                      # a field in another place
    return serialize(tree)

ATTRS = [b"strides", b"dilations", b"pads", b"kernel_shape", b"group", b"axes", b"perm", b"axis", b"shape", b"dims"]

def mutate_attributes(data):
    """The attributes shape inference and kernels rely on (AttributeProto:
    1 name, 3 i, 8 ints, packed or not) set to zero, negative, huge or
    wrong-length values: the bad models issue 15 found by hand."""
    tree = parse(data)
    attrs = [f[2] for _, f in all_fields(tree, []) if isinstance(f[2], list)
             and any(g[0] == 1 and g[1] == 2 and not isinstance(g[2], list) and bytes(g[2]) in ATTRS for g in f[2])]
    if not attrs: return mutate_model(data)
    for a in rng.sample(attrs, min(len(attrs), rng.choice([1, 1, 2]))):
        a[:] = [g for g in a if g[0] not in (3, 8)]
        values = [rng.choice([0, 0, 0, -1, -1, 1, 2, 3, 99, 1 << 31, (1 << 63) - 1, -(1 << 63)])
                  for _ in range(rng.choice([0, 1, 2, 2, 2, 3, 4, 8]))]
        if len(values) == 1 and rng.random() < 0.5: a.append([3, 0, values[0]])
        else: a.extend([8, 0, v] for v in values)
    return serialize(tree)

# ---- structure-aware: JSON traces ---------------------------------------------
HOSTILE = ["", "\u0000", "a\u0000b", "\"", "\\", "\ud7ff", "x" * 5000, -1, 0, 1e308, -1e308, 1.5, 2 ** 63, -2 ** 63,
           None, True, [], {}, [[[[[]]]]], {"float": [32]}, "NaN", "1e999"]

def mutate_json(data):
    events = json.loads(data)
    for _ in range(rng.choice([1, 1, 2, 5])):
        e = rng.choice(events)
        op = rng.randrange(7)
        if op == 0 and e: e[rng.choice(list(e))] = rng.choice(HOSTILE)
        elif op == 1 and e: del e[rng.choice(list(e))]
        elif op == 2 and isinstance(e.get("args"), dict) and e["args"]:
            e["args"][rng.choice(list(e["args"]))] = rng.choice(HOSTILE)
        elif op == 3: events.insert(rng.randrange(len(events) + 1), json.loads(json.dumps(e)))
        elif op == 4 and "ts" in e and "dur" in e:
            e["ts"] = e["ts"] + rng.choice([-1, 1]) * rng.choice([1, 1000, 10 ** 9]); e["dur"] = rng.choice([0, -1, 10 ** 12, e["dur"]])
        elif op == 5: events.remove(e)
        else: e["name"] = rng.choice(HOSTILE)
    text = json.dumps(events)
    if rng.random() < 0.2:  # corruption inside args, as issue 15 found
        text = text.replace('":[', '">[', 1) if rng.random() < 0.5 else text.replace('},', '},,', 1)
    return text.encode()

# ---- the campaign -------------------------------------------------------------
TRACE_COMMANDS = [
    (["report", "in.json"], set()),
    (["report", "in.json", "--by", "node", "--format", "csv"], set()),
    (["report", "in.json", "--format", "html", "-o", "out.html"], {"out.html"}),
    (["validate", "in.json"], set()),
    (["diff", "in.json", "seed.json"], set()),
    (["merge", "in.json", "seed.json", "-o", "out.json"], {"out.json"}),
]
def make_tasks():
    """The commands, their inputs made as they are needed: 5,000 mutated
    copies of a multi-megabyte model would not fit in memory at once."""
    for i in range(n_traces):
        seed_data = rng.choice(trace_seeds)
        kind = rng.choice(["trace/bytes", "trace/json", "trace/truncated"])
        if kind == "trace/bytes": data = mutate_bytes(seed_data)
        elif kind == "trace/json": data = mutate_json(seed_data)
        else: data = seed_data[:rng.randrange(len(seed_data))]
        args, outs = TRACE_COMMANDS[i % len(TRACE_COMMANDS)]
        yield (kind, i, {"in.json": data, "seed.json": trace_seeds[0]}, args, outs)
    for i in range(n_models):
        name, seed_data = rng.choice(list(model_seeds.items()))
        kind = rng.choice(["model/bytes", "model/struct", "model/attributes"])
        data = {"model/bytes": mutate_bytes, "model/struct": mutate_model, "model/attributes": mutate_attributes}[kind](seed_data)
        yield (kind, i, {"m.onnx": data}, ["run", "m.onnx", "--runs", "1", "--warmup", "0", "--no-table",
                                          "--output", "out.json"], {"out.json"})

os.makedirs(keep, exist_ok=True)
table = {}
findings = []
n, total_tasks = 0, n_traces + n_models
tasks = make_tasks()  # made in order from the one seeded rng: the same campaign every time
with cf.ThreadPoolExecutor(max_workers=jobs) as pool:
    while True:
        batch = [t for _, t in zip(range(64), tasks)]  # at most 64 inputs in memory
        if not batch: break
        for family, outcome, detail, kept in pool.map(lambda t: job(*t), batch):
            n += 1
            row = table.setdefault(family, {"tried": 0, "clean error": 0, "exit 0": 0, "crash": 0, "hang": 0, "clobber": 0})
            row["tried"] += 1
            row[outcome] += 1
            if kept: findings.append(f"{outcome}: {kept}: {detail.strip().splitlines()[-1] if detail.strip() else ''}")
            if n % 500 == 0: print(f"... {n}/{total_tasks}", file=sys.stderr, flush=True)
shutil.rmtree(work, ignore_errors=True)

cols = ["tried", "clean error", "exit 0", "crash", "hang", "clobber"]
print(f"{'family':<16}" + "".join(f"{c:>13}" for c in cols))
total = {c: 0 for c in cols}
for family in sorted(table):
    print(f"{family:<16}" + "".join(f"{table[family][c]:>13}" for c in cols))
    for c in cols: total[c] += table[family][c]
print(f"{'all':<16}" + "".join(f"{total[c]:>13}" for c in cols))
print(f"(seed {seed}, timeout {limit} s, memory limit {mem} MiB, {jobs} jobs)")
for f in findings[:50]: print(f)
if len(findings) > 50: print(f"... and {len(findings) - 50} more under {keep}")
sys.exit(1 if total["crash"] or total["hang"] or total["clobber"] else 0)
PY
