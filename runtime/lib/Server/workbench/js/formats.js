// Tensors in the server's JSON form ({dtype, shape, data: base64}), .npy and .safetensors files.
// A tensor here is {dtype, shape, bytes, values}: bytes little-endian row-major as sent, values
// the elements as numbers (int64 through Number, exact below 2^53).

const DTYPES = {
  float32: {size: 4, st: "F32", read: (b) => new Float32Array(b)},
  float64: {size: 8, st: "F64", read: (b) => new Float64Array(b)},
  float16: {size: 2, st: "F16", read: (b) => Float32Array.from(new Uint16Array(b), halfToFloat)},
  bfloat16: {size: 2, st: "BF16", read: (b) => bf16ToFloat(new Uint16Array(b))},
  int64: {size: 8, st: "I64", read: (b) => Float64Array.from(new BigInt64Array(b), Number)},
  int32: {size: 4, st: "I32", read: (b) => new Int32Array(b)},
  bool: {size: 1, st: "BOOL", read: (b) => new Uint8Array(b)},
};

const FROM_SAFETENSORS =
    Object.fromEntries(Object.entries(DTYPES).map(([name, d]) => [d.st, name]));

const NPY_DTYPES = {
  "<f4": "float32",
  "<f8": "float64",
  "<f2": "float16",
  "<i8": "int64",
  "<i4": "int32",
  "|b1": "bool",
};

export function numel(shape) {
  return shape.reduce((a, b) => a * b, 1);
}

export function isFloat(dtype) {
  return dtype.startsWith("float") || dtype === "bfloat16";
}

/// Builds a tensor from its bytes, checking their count against dtype and shape.
export function makeTensor(dtype, shape, bytes) {
  const d = DTYPES[dtype];
  if (!d) throw new Error(`unsupported dtype '${dtype}'`);
  const want = numel(shape) * d.size;
  if (bytes.byteLength !== want)
    throw new Error(`${dtype}[${shape.join(", ")}] needs ${want} bytes, got ${bytes.byteLength}`);
  // The typed-array views need an aligned buffer of their own.
  const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ?
      bytes :
      bytes.slice();
  return {dtype, shape, bytes: own, values: d.read(own.buffer)};
}

export function base64ToBytes(text) {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export function bytesToBase64(bytes) {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000)
    bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

/// A save from the response's `nns.saves` ({dtype, shape, data}).
export function decodeSave(save) {
  return makeTensor(save.dtype, save.shape, base64ToBytes(save.data));
}

/// The request form of a tensor param.
export function encodeParam(t) {
  return {dtype: t.dtype, shape: t.shape, data: bytesToBase64(t.bytes)};
}

/// A .npy file (format 1.0 to 3.0, little-endian, C order).
export function parseNpy(buffer) {
  const bytes = new Uint8Array(buffer);
  const magic = String.fromCharCode(...bytes.subarray(1, 6));
  if (bytes[0] !== 0x93 || magic !== "NUMPY") throw new Error("not a .npy file");
  const view = new DataView(buffer);
  const major = bytes[6];
  const headerLen = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const start = major === 1 ? 10 : 12;
  const header = new TextDecoder().decode(bytes.subarray(start, start + headerLen));
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(header)?.[1];
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header)?.[1];
  const shapeText = /'shape'\s*:\s*\(([^)]*)\)/.exec(header)?.[1];
  if (descr === undefined || fortran === undefined || shapeText === undefined)
    throw new Error("cannot read the .npy header");
  if (fortran === "True") throw new Error(".npy in Fortran order; save it in C order");
  const dtype = NPY_DTYPES[descr];
  if (!dtype)
    throw new Error(
        `.npy dtype '${descr}' is not supported (little-endian float32, float64, int64, int32)`);
  const shape = shapeText.split(",").map((s) => s.trim()).filter((s) => s).map(Number);
  return makeTensor(dtype, shape, bytes.subarray(start + headerLen));
}

/// A .safetensors file: a Map from tensor name to tensor.
export function parseSafetensors(buffer) {
  const view = new DataView(buffer);
  if (buffer.byteLength < 8) throw new Error("not a .safetensors file");
  const n = Number(view.getBigUint64(0, true));
  if (8 + n > buffer.byteLength) throw new Error("not a .safetensors file (header too long)");
  let header;
  try {
    header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 8, n)));
  } catch {
    throw new Error("not a .safetensors file (header is not JSON)");
  }
  const data = new Uint8Array(buffer, 8 + n);
  const out = new Map();
  for (const [name, e] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    const dtype = FROM_SAFETENSORS[e.dtype];
    if (!dtype) throw new Error(`tensor '${name}': dtype ${e.dtype} is not supported`);
    const [a, b] = e.data_offsets;
    out.set(name, makeTensor(dtype, e.shape, data.subarray(a, b)));
  }
  return out;
}

/// One .safetensors file from [name, tensor] pairs; the header is padded with spaces to a
/// multiple of 8 bytes.
export function writeSafetensors(entries) {
  const header = {};
  let offset = 0;
  for (const [name, t] of entries) {
    header[name] = {
      dtype: DTYPES[t.dtype].st,
      shape: t.shape,
      data_offsets: [offset, offset + t.bytes.length],
    };
    offset += t.bytes.length;
  }
  let json = JSON.stringify(header);
  const encoder = new TextEncoder();
  const pad = (8 - (encoder.encode(json).length % 8)) % 8;
  json += " ".repeat(pad);
  const head = encoder.encode(json);
  const out = new Uint8Array(8 + head.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  let at = 8 + head.length;
  for (const [, t] of entries) {
    out.set(t.bytes, at);
    at += t.bytes.length;
  }
  return out;
}

function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * 2 ** -14 * (frac / 1024);
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * 2 ** (exp - 15) * (1 + frac / 1024);
}

function bf16ToFloat(u16) {
  const bits = new Uint32Array(u16.length);
  for (let i = 0; i < u16.length; i++) bits[i] = u16[i] << 16;
  return new Float32Array(bits.buffer);
}
