package imgsize

import (
	"bytes"
	"errors"
	"image"
	"image/jpeg"
	"image/png"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// PNG and JPEG sizes come from their headers; WebP's three chunk kinds
// (lossy, lossless, extended) are read as the container specification
// lays them out; anything else is ErrUnknown. (Chromium's WebP output is
// checked by the screenshot watchdog's tests.)
func TestOf(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 37, 21))
	var p, j bytes.Buffer
	if err := png.Encode(&p, img); err != nil {
		t.Fatal(err)
	}
	if err := jpeg.Encode(&j, img, nil); err != nil {
		t.Fatal(err)
	}
	webp := func(chunk string, payload ...byte) []byte {
		b := append([]byte("RIFF\x00\x00\x00\x00WEBP"+chunk+"\x00\x00\x00\x00"), payload...)
		return append(b, make([]byte, 30)...)
	}
	for name, c := range map[string]struct {
		b    []byte
		w, h int
	}{
		"png":  {p.Bytes(), 37, 21},
		"jpeg": {j.Bytes(), 37, 21},
		// VP8: frame tag (3 bytes), start code, 14-bit width and height.
		"webp lossy": {webp("VP8 ", 0, 0, 0, 0x9d, 0x01, 0x2a, 0x00, 0x05, 0x20, 0x03), 1280, 800},
		// VP8L: signature, then width-1 and height-1 in 14 bits each.
		"webp lossless": {webp("VP8L", 0x2f, byte(639&0xff), byte(639>>8|(399&0x3)<<6), byte(399>>2&0xff), byte(399>>10)), 640, 400},
		// VP8X: flags, then 24-bit width-1 and height-1.
		"webp extended": {webp("VP8X", 0, 0, 0, 0, 0xff, 0x03, 0, 0x7f, 0x02, 0), 1024, 640},
	} {
		w, h, err := Of(c.b)
		if err != nil || w != c.w || h != c.h {
			t.Errorf("%s: %dx%d %v, want %dx%d", name, w, h, err, c.w, c.h)
		}
	}
	for b, want := range map[string]string{string(p.Bytes()): "image/png", string(j.Bytes()): "image/jpeg", string(webp("VP8X")): "image/webp", "GIF89a": ""} {
		if got := MediaType([]byte(b)); got != want {
			t.Errorf("media type of %q: %q, want %q", b[:min(len(b), 6)], got, want)
		}
	}
	// Not a PNG signature (only "PNG" at 1..4), a VP8 frame of 0×0, a
	// truncated PNG: unknown.
	badSig := append([]byte("xPNG"), p.Bytes()[4:]...)
	zeroVP8 := webp("VP8 ", 0, 0, 0, 0x9d, 0x01, 0x2a, 0, 0, 0, 0)
	for _, b := range [][]byte{nil, []byte("GIF89a..."), p.Bytes()[:12], badSig, zeroVP8} {
		if w, h, err := Of(b); !errors.Is(err, ErrUnknown) {
			t.Errorf("%q: %dx%d %v, want ErrUnknown", b[:min(len(b), 16)], w, h, err)
		}
	}
	// Of reads a size exactly when MediaType names a format (a 0×0 frame
	// excepted: it has a format, not a size).
	for _, b := range [][]byte{p.Bytes(), j.Bytes(), badSig, []byte("\xff\xd8\x00 not a jpeg"), webp("VP8X")} {
		_, _, err := Of(b)
		if (err == nil) != (MediaType(b) != "") {
			t.Errorf("%q: Of says %v, MediaType says %q", b[:min(len(b), 16)], err, MediaType(b))
		}
	}
}
