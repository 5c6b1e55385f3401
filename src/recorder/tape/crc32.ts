/**
 * CRC-32 (IEEE 802.3, the polynomial zlib and PNG use; reflected, initial and final value 0xFFFFFFFF) of a byte
 * range. A version-3 frame head stores it over its first 20 bytes (FORMAT.md, "Frames"): a reader checks the
 * length field with it before reading the payload the length points to. Written here rather than taken from
 * `zlib.crc32` (Node 20.15+ only) so every Node 20 reads the same tapes; at 20 bytes the table loop costs less
 * than a call into zlib.
 */
const TABLE = (() => {
  const t = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c;
  }
  return t;
})();

export function crc32(bytes: Uint8Array, start = 0, end = bytes.byteLength): number {
  let c = -1;
  for (let i = start; i < end; i++) c = TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}
