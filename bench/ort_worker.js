#!/usr/bin/env node
// ONNX Runtime's side of epprof_ort_bench (bench/ort_bench.cpp), which starts
// it once and drives it over stdin/stdout, alternating its batches with
// epprof's. Usage: node ort_worker.js ONNXRUNTIME_NODE_DIR
//
// Commands, one a line, words separated by tabs; every reply starts with
// "ok" or "error MESSAGE":
//   load MODEL INPUT_PB...  two sessions (1 and 2 intra-op threads), inputs
//                           read from TensorProto files (raw_data), in the
//                           model's input order
//   run THREADS N           N timed runs -> "ok MS MS ..."
//   outputs THREADS         one run -> "ok K", then per output a line
//                           "ONNX_TYPE RANK DIMS... NBYTES NAME_BYTES", the
//                           name (UTF-8) and the NBYTES of data
//   profile THREADS N PREFIX  N runs in a session of its own with ONNX
//                           Runtime's profiler on -> "ok PROFILE_JSON" (the
//                           file ONNX Runtime wrote, PREFIX_<date>.json)
//   free                    drops the sessions
// Prints "ready VERSION" once ONNX Runtime is loaded.
//
// Sessions: CPU EP, intraOpNumThreads 1 or 2, interOpNumThreads 1,
// executionMode 'sequential', graph optimisations at ONNX Runtime's default
// (all). Runs call the native binding's synchronous run(), the call
// InferenceSession.run() makes after a setImmediate() hop and a Promise:
// the timing is ONNX Runtime's inference plus the binding's tensor
// conversion, without the event loop.
'use strict';
const path = require('path');
const readline = require('readline');

const ortDir = process.argv[2];
let ort, binding;  // the package, and its native binding (dist/binding.js)
try {
  ort = require(ortDir);
  const native = require(path.join(ortDir, 'dist', 'binding'));
  native.initOrt();
  binding = native.binding;
} catch (e) {
  process.stdout.write(`error cannot load onnxruntime-node from ${ortDir}: ${String(e.message).split('\n')[0]}\n`);
  process.exit(1);
}

// TensorProto: dims = 1, data_type = 2, name = 8, raw_data = 9 (the form
// make_reference.js and epprof's write_tensor_file write).
const TYPES = { 1: 'float32', 2: 'uint8', 3: 'int8', 4: 'uint16', 5: 'int16', 6: 'int32', 7: 'int64', 9: 'bool',
                10: 'float16', 11: 'float64', 12: 'uint32', 13: 'uint64' };
const ARRAYS = { float32: Float32Array, uint8: Uint8Array, int8: Int8Array, uint16: Uint16Array, int16: Int16Array,
                 int32: Int32Array, int64: BigInt64Array, bool: Uint8Array, float16: Uint16Array,
                 float64: Float64Array, uint32: Uint32Array, uint64: BigUint64Array };

function readTensor(file) {
  const buf = require('fs').readFileSync(file);
  let pos = 0;
  const varint = () => {
    let v = 0n, shift = 0n, b;
    do { b = buf[pos++]; v |= BigInt(b & 0x7f) << shift; shift += 7n; } while (b & 0x80);
    return v;
  };
  const dims = [];
  let type = 0, raw = null;
  while (pos < buf.length) {
    const key = Number(varint()), field = key >> 3, wire = key & 7;
    if (wire === 0) {
      const v = varint();
      if (field === 1) dims.push(Number(v));
      else if (field === 2) type = Number(v);
    } else if (wire === 2) {
      const len = Number(varint()), end = pos + len;
      if (field === 1) while (pos < end) dims.push(Number(varint()));
      else if (field === 9) raw = buf.subarray(pos, end);
      pos = end;
    } else if (wire === 1) pos += 8;
    else if (wire === 5) pos += 4;
    else throw new Error(`${file}: unexpected wire type ${wire}`);
  }
  const dtype = TYPES[type];
  if (!dtype) throw new Error(`${file}: unsupported data_type ${type}`);
  if (!raw) throw new Error(`${file}: no raw_data (typed data fields are not read here)`);
  const Arr = ARRAYS[dtype];
  const data = new Arr(raw.byteLength / Arr.BYTES_PER_ELEMENT);  // a copy: aligned
  new Uint8Array(data.buffer).set(raw);
  return new ort.Tensor(dtype, dtype === 'bool' ? new Uint8Array(data.buffer) : data, dims);
}

let sessions = null, feeds = null, fetches = null;

let modelPath = null;

function open(model, threads, profilePrefix) {
  const s = new binding.InferenceSession();
  const options = { executionProviders: ['cpu'], intraOpNumThreads: threads, interOpNumThreads: 1,
                    executionMode: 'sequential' };
  if (profilePrefix) Object.assign(options, { enableProfiling: true, profileFilePrefix: profilePrefix });
  s.loadModel(model, options);
  return s;
}

const commands = {
  load(model, ...inputs) {
    modelPath = model;
    sessions = { 1: open(model, 1), 2: open(model, 2) };
    const names = sessions[1].inputMetadata.map((m) => m.name);
    if (names.length !== inputs.length)
      throw new Error(`the model has ${names.length} inputs (${names.join(', ')}), ${inputs.length} files given`);
    feeds = {};
    names.forEach((name, k) => { feeds[name] = readTensor(inputs[k]); });
    fetches = {};
    for (const m of sessions[1].outputMetadata) fetches[m.name] = null;
    return 'ok';
  },
  run(threads, n) {
    const s = sessions[threads], ms = [];
    for (let i = 0; i < Number(n); ++i) {
      const t0 = process.hrtime.bigint();
      s.run(feeds, fetches, {});
      ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    return `ok ${ms.join(' ')}`;
  },
  outputs(threads) {
    const results = sessions[threads].run(feeds, fetches, {});
    const parts = [Buffer.from(`ok ${Object.keys(results).length}\n`)];
    for (const [name, t] of Object.entries(results)) {
      const type = Object.keys(TYPES).find((k) => TYPES[k] === t.type) || 0;
      const d = t.data;
      const nameBytes = Buffer.from(name, 'utf8');  // names may hold spaces (oww_timer's is JSON)
      parts.push(Buffer.from(`${[type, t.dims.length, ...t.dims, d.byteLength, nameBytes.length].join(' ')}\n`));
      parts.push(nameBytes, Buffer.from(d.buffer, d.byteOffset, d.byteLength));
    }
    process.stdout.write(Buffer.concat(parts));
    return null;
  },
  profile(threads, n, prefix) {
    const fs = require('fs');
    const dir = path.dirname(prefix), base = path.basename(prefix) + '_';
    const before = new Set(fs.readdirSync(dir));
    const s = open(modelPath, Number(threads), prefix);
    for (let i = 0; i < Number(n); ++i) s.run(feeds, fetches, {});
    s.endProfiling();
    s.dispose();
    const written = fs.readdirSync(dir).filter((f) => f.startsWith(base) && f.endsWith('.json') && !before.has(f));
    if (written.length !== 1) throw new Error(`expected one new profile ${prefix}_*.json, found ${written.length}`);
    return `ok ${path.join(dir, written[0])}`;
  },
  free() {
    for (const s of Object.values(sessions || {})) s.dispose();
    sessions = feeds = fetches = null;
    return 'ok';
  },
};

process.stdout.write(`ready ${ort.env.versions.node}\n`);
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const [cmd, ...args] = line.split('\t');  // tabs: paths may hold spaces
  let reply;
  try {
    if (!commands[cmd]) throw new Error(`unknown command '${cmd}'`);
    reply = commands[cmd](...args);
  } catch (e) {
    reply = `error ${String(e.message).replace(/\s+/g, ' ')}`;
  }
  if (reply !== null) process.stdout.write(`${reply}\n`);
});
