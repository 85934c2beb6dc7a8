"""An MP3 file whose APE tag holds a ReplayGain track gain of 1e300 (benches/real-bugs.sh's
mp3gain case): 50 silent MPEG-1 layer III frames (128 kbit/s, 44.1 kHz, mono, all side
information zero) and an APEv2 tag with one item and no header.
    python3 mkmp3.py OUT.mp3"""
import struct
import sys

frame = bytes([0xFF, 0xFB, 0x90, 0xC4]) + bytes(417 - 4)
value = b"1e300 dB"
item = struct.pack("<II", len(value), 0) + b"REPLAYGAIN_TRACK_GAIN\0" + value
footer = b"APETAGEX" + struct.pack("<IIII", 2000, len(item) + 32, 1, 0) + bytes(8)
with open(sys.argv[1], "wb") as f:
    f.write(frame * 50 + item + footer)
