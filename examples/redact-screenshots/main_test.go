package main

import (
	"bytes"
	"context"
	"image/png"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The observation's screenshot is the replacement watchdog's image: the
// password field is black in it, the field above it is not.
func TestExample(t *testing.T) {
	var out bytes.Buffer
	shot, err := run(context.Background(), &out)
	if err != nil {
		t.Fatal(err)
	}
	if want := "regions blacked out: 2\nthe observation carries the redacted image: true\n"; out.String() != want {
		t.Fatalf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	dark := func(x, y int) bool {
		r, g, b, _ := img.At(x, y).RGBA()
		return r+g+b < 3*0x1000
	}
	// The page has no margin: the user field is the first 40-odd pixels,
	// the password field the next ones.
	if !dark(150, 62) {
		t.Error("the password field is visible in the screenshot")
	}
	if dark(250, 15) {
		t.Error("the user field was blacked out too")
	}
}
