# Checks a plan file's header (plan_file.h layout) and prints what it finds, for FileCheck.
import re
import struct
import sys


def crc32c(data):
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    crc = 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


data = open(sys.argv[1], "rb").read()
magic = data[:8].decode("ascii", "replace")
version, header, message, blob_offset, blob_bytes, crc = struct.unpack_from("<IIQQQI", data, 8)
aligned = int(blob_offset % 64 == 0 and blob_offset >= 64 + message)
sizes = int(blob_offset + blob_bytes == len(data))
ok_crc = int(crc32c(data[64:]) == crc)
print(f"magic={magic} version={version} header={header} aligned={aligned} sizes={sizes} "
      f"crc={ok_crc}")
body = data[64:64 + message]
for name in sorted(set(re.findall(rb"(?:a8\.)?[A-Za-z]+:[a-z0-9_,]*->[a-z0-9,]+", body))):
    print("kernel", name.decode())
for m in re.findall(rb"[\w.-]+\.onnx(?:txt)?", body):
    print("model", m.decode())
for m in re.findall(rb"xxh3:[0-9a-f]{16}", body):
    print("hash", m.decode())
