// Package imgsize reads an encoded image's size from its header (PNG, JPEG,
// WebP) without decoding its pixels.
package imgsize

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"image/jpeg"
	"image/png"
)

// ErrUnknown: the bytes are not a PNG, JPEG or WebP image with a readable
// header.
var ErrUnknown = errors.New("imgsize: not a PNG, JPEG or WebP header")

// Of returns the width and height in pixels of a PNG, JPEG or WebP image,
// read from its header (the pixels are not decoded). It recognises a
// format by the same magic bytes as MediaType, and a header that says 0
// pixels either way is ErrUnknown.
func Of(b []byte) (w, h int, err error) {
	var cfg image.Config
	switch {
	case len(b) >= 8 && string(b[:8]) == pngSignature:
		cfg, err = png.DecodeConfig(bytes.NewReader(b))
	case len(b) >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF:
		cfg, err = jpeg.DecodeConfig(bytes.NewReader(b))
	case len(b) >= 30 && string(b[0:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		w, h, err := webp(b)
		if err == nil && (w <= 0 || h <= 0) {
			// A VP8 frame header may say 0: no image is 0 pixels wide.
			err = ErrUnknown
		}
		if err != nil {
			return 0, 0, err
		}
		return w, h, nil
	default:
		return 0, 0, ErrUnknown
	}
	if err != nil {
		return 0, 0, errors.Join(ErrUnknown, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return 0, 0, ErrUnknown
	}
	return cfg.Width, cfg.Height, nil
}

// pngSignature opens every PNG file.
const pngSignature = "\x89PNG\r\n\x1a\n"

// webp reads the first chunk of a WebP file: VP8 (lossy), VP8L (lossless)
// or VP8X (extended), as the WebP container specification lays them out.
func webp(b []byte) (int, int, error) {
	switch string(b[12:16]) {
	case "VP8 ":
		// Frame header: 3 bytes tag, start code 9d 01 2a, then 14-bit
		// width and height.
		if b[23] != 0x9d || b[24] != 0x01 || b[25] != 0x2a {
			return 0, 0, ErrUnknown
		}
		return int(binary.LittleEndian.Uint16(b[26:28]) & 0x3fff), int(binary.LittleEndian.Uint16(b[28:30]) & 0x3fff), nil
	case "VP8L":
		// Signature 0x2f, then 14 bits width-1 and 14 bits height-1.
		if b[20] != 0x2f {
			return 0, 0, ErrUnknown
		}
		v := binary.LittleEndian.Uint32(b[21:25])
		return int(v&0x3fff) + 1, int(v>>14&0x3fff) + 1, nil
	case "VP8X":
		// Flags (4 bytes), then 24-bit canvas width-1 and height-1.
		w := int(b[24]) | int(b[25])<<8 | int(b[26])<<16
		h := int(b[27]) | int(b[28])<<8 | int(b[29])<<16
		return w + 1, h + 1, nil
	}
	return 0, 0, ErrUnknown
}

// MediaType names the format of an encoded image by its magic bytes:
// "image/png", "image/jpeg", "image/webp", or "" when it is none of them.
func MediaType(b []byte) string {
	switch {
	case len(b) >= 8 && string(b[:8]) == pngSignature:
		return "image/png"
	case len(b) >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF:
		return "image/jpeg"
	case len(b) >= 12 && string(b[0:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}
