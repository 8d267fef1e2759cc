package session

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
)

// mutationCounterJS runs in every new document before the page's scripts
// and counts its structural mutations.
//
//go:embed js/mutations.js
var mutationCounterJS string

//go:embed js/fingerprint.js
var fingerprintReadJS string

// fingerprintJS installs the counter when the document predates the
// session, then reads the fingerprint.
var fingerprintJS = mutationCounterJS + "\n" + fingerprintReadJS

// Fingerprint reads the fingerprint of a tab ("" = focused) in one round
// trip (see events.PageFingerprint).
func (s *Session) Fingerprint(ctx context.Context, tabID string) (events.PageFingerprint, error) {
	var fp events.PageFingerprint
	cs, err := s.PageSession(tabID)
	if err != nil {
		return fp, err
	}
	if err := pagejs.Evaluate(ctx, cs, fingerprintJS, &fp); err != nil {
		return fp, fmt.Errorf("session: fingerprint: %w", err)
	}
	if fp.URL == "" {
		return fp, fmt.Errorf("session: fingerprint: the page returned nothing")
	}
	return fp, nil
}
