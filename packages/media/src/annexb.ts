/**
 * Splits an Annex B byte stream (NAL units behind `00 00 01` or `00 00 00 01` start codes) into its
 * NAL units, without start codes. Bytes before the first start code are ignored.
 */
export function splitAnnexB(data: Uint8Array): Uint8Array[] {
  const units: Uint8Array[] = [];
  let start = -1;
  let i = 0;
  while (i + 2 < data.length) {
    if (data[i] === 0 && data[i + 1] === 0 && data[i + 2] === 1) {
      if (start >= 0) units.push(trimTrailingZeros(data.subarray(start, i)));
      i += 3;
      start = i;
    } else {
      i++;
    }
  }
  if (start >= 0 && start < data.length) units.push(data.subarray(start));
  return units.filter((u) => u.length > 0);
}

/** A 4-byte start code leaves one zero byte at the end of the previous unit; drop it. */
function trimTrailingZeros(unit: Uint8Array): Uint8Array {
  let end = unit.length;
  while (end > 0 && unit[end - 1] === 0) end--;
  return unit.subarray(0, end);
}
