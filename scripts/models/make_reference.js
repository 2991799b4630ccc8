#!/usr/bin/env node
// Writes the real-model tests' reference data with ONNX Runtime (CPU EP,
// default graph optimisations): for each model of models.txt, deterministic
// inputs (fixed-seed PRNG) and ONNX Runtime's outputs as ONNX TensorProto
// files, then CACHE/manifest.txt listing them for tests/runtime/real_models_test.cpp.
//
// Usage: node make_reference.js CACHE_DIR MODELS_TXT
//   CACHE_DIR/models/<id>.onnx must exist (scripts/fetch_models.sh puts them
//   there) and CACHE_DIR/ort/node_modules must hold onnxruntime-node.
// Idempotent: a model whose CACHE_DIR/ref/<id>/stamp matches its manifest
// line, this script and ONNX Runtime's version is skipped.
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');

const [cacheDir, modelsTxt] = process.argv.slice(2);
if (!cacheDir || !modelsTxt) {
  console.error('usage: make_reference.js CACHE_DIR MODELS_TXT');
  process.exit(2);
}
const ort = require(path.join(path.resolve(cacheDir), 'ort', 'node_modules', 'onnxruntime-node'));
const ortVersion = ort.env.versions.node;

// ---- the pinned manifest ------------------------------------------------

function parseSpec(spec, where) {
  const m = /^(float32|int64)\[([0-9,]*)\]:(u|c|t)\(([^)]*)\)$/.exec(spec);
  if (!m) throw new Error(`${where}: bad input spec '${spec}' (want DTYPE[DIMS]:u(LO,HI), :t(LO,HI) or :c(V))`);
  const dims = m[2] === '' ? [] : m[2].split(',').map(Number);
  const args = m[4].split(',').map(Number);
  if (args.some(Number.isNaN) || args.length !== (m[3] === 'c' ? 1 : 2))
    throw new Error(`${where}: bad generator arguments in '${spec}'`);
  if (m[3] === 't' && (m[1] !== 'float32' || dims.length !== 4))
    throw new Error(`${where}: t() makes float32 images [N,C,H,W]: '${spec}'`);
  return { dtype: m[1], dims, gen: m[3], args };
}

function readModels(file) {
  const models = [];
  fs.readFileSync(file, 'utf8').split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const f = line.split(/\s+/);
    const where = `${file}:${i + 1}`;
    if (f.length < 6) throw new Error(`${where}: expected id, package@version, path, sha256, tolerance, inputs`);
    const tolerance = Number(f[4]);
    if (!(tolerance > 0)) throw new Error(`${where}: bad tolerance '${f[4]}'`);
    models.push({ id: f[0], tolerance: f[4], inputs: f.slice(5).map((s) => parseSpec(s, where)), line });
  });
  return models;
}

// ---- deterministic inputs -----------------------------------------------

// mulberry32, seeded from the model id and input index: every model gets its
// own stream, the same on every machine.
function prng(seedText) {
  let a = crypto.createHash('sha256').update(seedText).digest().readUInt32LE(0);
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function makeInput(spec, seedText) {
  const n = spec.dims.reduce((p, d) => p * d, 1);
  const rand = prng(seedText);
  if (spec.dtype === 'float32') {
    const data = new Float32Array(n);
    const [lo, hi] = spec.args;
    if (spec.gen === 't') {
      // A text-like page: lines of dark glyph-sized strokes on a light
      // background, with noise, scaled to [LO, HI]. Random noise alone makes
      // OCR models answer a constant (the detector's map is all 0).
      const [, , H, W] = spec.dims;
      for (let i = 0; i < n; ++i) {
        const y = Math.floor(i / W) % H, x = i % W;
        const ink = y % 24 >= 8 && y % 24 < 16 && x % 12 < 8 && x >= 8 && x < W - 8;
        data[i] = lo + (hi - lo) * ((ink ? 0.1 : 0.9) + 0.1 * (rand() - 0.5));
      }
    } else {
      for (let i = 0; i < n; ++i) data[i] = spec.gen === 'u' ? lo + (hi - lo) * rand() : lo;
    }
    return new ort.Tensor('float32', data, spec.dims);
  }
  const data = new BigInt64Array(n);
  for (let i = 0; i < n; ++i) {
    const v = spec.gen === 'u' ? Math.floor(spec.args[0] + (spec.args[1] - spec.args[0] + 1) * rand()) : spec.args[0];
    data[i] = BigInt(v);
  }
  return new ort.Tensor('int64', data, spec.dims);
}

// ---- TensorProto, hand-encoded --------------------------------------------
// dims = 1 (packed int64), data_type = 2, name = 8, raw_data = 9.

const ONNX_TYPES = { float32: 1, uint8: 2, int8: 3, uint16: 4, int16: 5, int32: 6, int64: 7, bool: 9,
                     float16: 10, float64: 11, uint32: 12, uint64: 13 };

function varint(v) {
  let x = BigInt(v);
  const out = [];
  do {
    let b = Number(x & 0x7fn);
    x >>= 7n;
    if (x !== 0n) b |= 0x80;
    out.push(b);
  } while (x !== 0n);
  return Buffer.from(out);
}

function lengthDelimited(field, payload) {
  return Buffer.concat([varint((field << 3) | 2), varint(payload.length), payload]);
}

function tensorProto(tensor, name) {
  const type = ONNX_TYPES[tensor.type];
  if (!type) throw new Error(`output '${name}': unsupported element type ${tensor.type}`);
  const parts = [];
  if (tensor.dims.length) parts.push(lengthDelimited(1, Buffer.concat(tensor.dims.map(varint))));
  parts.push(varint((2 << 3) | 0), varint(type));
  parts.push(lengthDelimited(8, Buffer.from(name, 'utf8')));
  const d = tensor.data;  // a TypedArray (bool: Uint8Array); this machine is little-endian, as ONNX's raw_data
  parts.push(lengthDelimited(9, Buffer.from(d.buffer, d.byteOffset, d.byteLength)));
  return Buffer.concat(parts);
}

// ---- main ---------------------------------------------------------------

async function reference(model, refDir, stampText) {
  const modelPath = path.join(cacheDir, 'models', `${model.id}.onnx`);
  const session = await ort.InferenceSession.create(modelPath, { executionProviders: ['cpu'] });
  if (session.inputNames.length !== model.inputs.length)
    throw new Error(`${model.id}: the model has ${session.inputNames.length} inputs ` +
                    `(${session.inputNames.join(', ')}), models.txt gives ${model.inputs.length}`);
  const feeds = {};
  session.inputNames.forEach((name, k) => { feeds[name] = makeInput(model.inputs[k], `${model.id}/${k}`); });
  const results = await session.run(feeds);
  // ONNX Runtime's own floor: the same model with graph optimisations off
  // (no fusions, other kernels) differs from the optimised run by this much.
  const plain = await ort.InferenceSession.create(modelPath, { executionProviders: ['cpu'],
                                                               graphOptimizationLevel: 'disabled' });
  const plainResults = await plain.run(feeds);
  await plain.release();
  let floor = 0;
  for (const name of session.outputNames) {
    const a = plainResults[name].data, b = results[name].data;
    if (!(b instanceof Float32Array || b instanceof Float64Array)) continue;
    for (let i = 0; i < b.length; ++i) floor = Math.max(floor, Math.abs(a[i] - b[i]) / (Math.abs(b[i]) + 1e-3));
  }
  const tmp = `${refDir}.tmp`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp, { recursive: true });
  session.inputNames.forEach((name, k) => fs.writeFileSync(path.join(tmp, `input_${k}.pb`), tensorProto(feeds[name], name)));
  session.outputNames.forEach((name, k) => fs.writeFileSync(path.join(tmp, `output_${k}.pb`), tensorProto(results[name], name)));
  fs.writeFileSync(path.join(tmp, 'ort_floor'), `${floor.toPrecision(3)}\n`);
  fs.writeFileSync(path.join(tmp, 'stamp'), stampText);
  await session.release();
  fs.rmSync(refDir, { recursive: true, force: true });
  fs.renameSync(tmp, refDir);
  return { inputs: session.inputNames.length, outputs: session.outputNames.length, floor: floor.toPrecision(3) };
}

async function main() {
  const models = readModels(modelsTxt);
  const self = crypto.createHash('sha256').update(fs.readFileSync(__filename)).digest('hex');
  const lines = [
    `# epprof real-model reference data: ONNX Runtime ${ortVersion} (CPU EP, default graph optimisations)`,
    '# id  model-file  reference-dir  tolerance  inputs  outputs  ort-floor   (paths relative to this file)',
    '# ort-floor: the largest relative difference between ONNX Runtime\'s own optimised and unoptimised runs',
  ];
  for (const model of models) {
    const refDir = path.join(cacheDir, 'ref', model.id);
    const stampText = `${model.line}\nonnxruntime-node ${ortVersion}\nmake_reference.js ${self}\n`;
    let counts;
    const stampPath = path.join(refDir, 'stamp');
    if (fs.existsSync(stampPath) && fs.readFileSync(stampPath, 'utf8') === stampText) {
      const files = fs.readdirSync(refDir);
      counts = { inputs: files.filter((f) => f.startsWith('input_')).length,
                 outputs: files.filter((f) => f.startsWith('output_')).length,
                 floor: fs.readFileSync(path.join(refDir, 'ort_floor'), 'utf8').trim() };
      console.log(`reference: ${model.id}: up to date`);
    } else {
      counts = await reference(model, refDir, stampText);
      console.log(`reference: ${model.id}: ${counts.inputs} inputs, ${counts.outputs} outputs, ONNX Runtime's own floor ${counts.floor} (ONNX Runtime ${ortVersion})`);
    }
    lines.push(`${model.id} models/${model.id}.onnx ref/${model.id} ${model.tolerance} ${counts.inputs} ${counts.outputs} ${counts.floor}`);
  }
  const manifest = path.join(cacheDir, 'manifest.txt');
  fs.writeFileSync(`${manifest}.tmp`, lines.join('\n') + '\n');
  fs.renameSync(`${manifest}.tmp`, manifest);
  console.log(`reference: wrote ${manifest} (${models.length} models)`);
}

main().catch((e) => {
  console.error(`make_reference.js: ${e.message}`);
  process.exit(1);
});
