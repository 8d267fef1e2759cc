package llm

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Inline returns the image's media type and bytes when it carries Data or a
// base64 "data:" URL. For a remote URL it returns ok=false and no error.
// A Data image without MediaType, or a malformed data URL, is an error
// wrapping ErrBadRequest.
func (im *Image) Inline() (mediaType string, data []byte, ok bool, err error) {
	switch {
	case len(im.Data) > 0:
		if im.MediaType == "" {
			return "", nil, false, fmt.Errorf("%w: image data without MediaType", ErrBadRequest)
		}
		return im.MediaType, im.Data, true, nil
	case strings.HasPrefix(im.URL, "data:"):
		mt, b, err := ParseDataURL(im.URL)
		if err != nil {
			return "", nil, false, err
		}
		if im.MediaType != "" {
			mt = im.MediaType
		}
		return mt, b, true, nil
	case im.URL != "":
		return "", nil, false, nil
	default:
		return "", nil, false, fmt.Errorf("%w: image part with neither Data nor URL", ErrBadRequest)
	}
}

// DataURL returns the image as a URL: its URL if it has one, otherwise a
// base64 data URL built from Data.
func (im *Image) DataURL() (string, error) {
	if im.URL != "" {
		return im.URL, nil
	}
	mt, b, _, err := im.Inline()
	if err != nil {
		return "", err
	}
	return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(b), nil
}

// ParseDataURL decodes a base64 "data:<mediatype>;base64,<data>" URL. Errors
// wrap ErrBadRequest.
func ParseDataURL(u string) (mediaType string, data []byte, err error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", nil, fmt.Errorf("%w: not a data URL", ErrBadRequest)
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return "", nil, fmt.Errorf("%w: data URL without a comma", ErrBadRequest)
	}
	mt, isB64 := strings.CutSuffix(meta, ";base64")
	if !isB64 {
		// Percent-encoded payloads are legal but never images in practice.
		s, err := url.PathUnescape(payload)
		if err != nil {
			return "", nil, fmt.Errorf("%w: data URL: %v", ErrBadRequest, err)
		}
		payload = base64.StdEncoding.EncodeToString([]byte(s))
	}
	if mt == "" {
		return "", nil, fmt.Errorf("%w: data URL without a media type", ErrBadRequest)
	}
	b, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return "", nil, fmt.Errorf("%w: data URL: %v", ErrBadRequest, err)
	}
	return mt, b, nil
}

// Validate checks the request's shape: at least one message, known roles,
// each part exactly one of text or image, and a schema (if any) that is a
// JSON object with "type": "object" at its root. Errors wrap ErrBadRequest.
// Providers call it before sending.
func (r *Request) Validate() error {
	if len(r.Messages) == 0 {
		return fmt.Errorf("%w: no messages", ErrBadRequest)
	}
	for i, m := range r.Messages {
		switch m.Role {
		case RoleSystem, RoleUser, RoleAssistant:
		default:
			return fmt.Errorf("%w: message %d: unknown role %q", ErrBadRequest, i, m.Role)
		}
		if len(m.Parts) == 0 {
			return fmt.Errorf("%w: message %d has no parts", ErrBadRequest, i)
		}
		for j, p := range m.Parts {
			if p.Image != nil && p.Text != "" {
				return fmt.Errorf("%w: message %d part %d has both text and image", ErrBadRequest, i, j)
			}
			if p.Image != nil {
				if _, _, _, err := p.Image.Inline(); err != nil {
					return fmt.Errorf("message %d part %d: %w", i, j, err)
				}
				if m.Role != RoleUser {
					return fmt.Errorf("%w: message %d part %d: images are only allowed in user messages", ErrBadRequest, i, j)
				}
			}
		}
	}
	if r.Schema != nil {
		if _, err := r.Schema.Object(); err != nil {
			return err
		}
	}
	return nil
}

// Object decodes the schema into a generic map and checks that its root is an
// object schema. Errors wrap ErrBadRequest.
func (s *Schema) Object() (map[string]any, error) {
	var m map[string]any
	if err := jsonUnmarshal(s.JSON, &m); err != nil {
		return nil, fmt.Errorf("%w: schema %q is not a JSON object: %v", ErrBadRequest, s.Name, err)
	}
	if t, _ := m["type"].(string); t != "object" {
		return nil, fmt.Errorf("%w: schema %q: root must have \"type\": \"object\"", ErrBadRequest, s.Name)
	}
	return m, nil
}

// ToolName returns Name sanitised to [A-Za-z0-9_-]{1,64}; "output" when empty.
func (s *Schema) ToolName() string {
	var b strings.Builder
	for _, r := range s.Name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 64 {
			break
		}
	}
	if b.Len() == 0 {
		return "output"
	}
	return b.String()
}

var errNilSchema = errors.New("empty schema")

func jsonUnmarshal(b []byte, v any) error {
	if len(b) == 0 {
		return errNilSchema
	}
	return jsonStd(b, v)
}
