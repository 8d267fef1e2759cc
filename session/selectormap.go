package session

import (
	"fmt"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
)

// SelectorMap is the index → element map of the last observation of the
// focused tab. The DOM watchdog fills it on every BrowserStateRequest; a
// focus change clears it. It is replaced whole, never modified, so a value
// read from the session stays consistent.
type SelectorMap struct {
	// TargetID is the tab it was taken in; Fingerprint the page then.
	TargetID    string
	Fingerprint string
	Elements    map[int]events.ElementInfo
}

// SetSelectorMap replaces the cached selector map (nil clears it).
func (s *Session) SetSelectorMap(m *SelectorMap) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.selector = m
}

// SelectorMap returns the cached selector map, or nil.
func (s *Session) SelectorMap() *SelectorMap {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.selector
}

// Element looks an index up in the cached selector map. An index that is not
// there is an *ElementNotFoundError telling the caller to refresh the state.
func (s *Session) Element(index int) (events.ElementInfo, error) {
	s.mu.Lock()
	m := s.selector
	s.mu.Unlock()
	if m == nil {
		return events.ElementInfo{}, &ElementNotFoundError{Index: index}
	}
	el, ok := m.Elements[index]
	if !ok {
		return events.ElementInfo{}, &ElementNotFoundError{Index: index, MapSize: len(m.Elements)}
	}
	return el, nil
}

// Resolve turns an element-targeting event's Target into the node's
// reference and the CDP session that acts on it. An explicit Element wins
// over Index.
func (s *Session) Resolve(t events.Target) (events.ElementRef, *cdp.Session, error) {
	ref := events.ElementRef{}
	if t.Element != nil {
		ref = *t.Element
	} else {
		el, err := s.Element(t.Index)
		if err != nil {
			return ref, nil, err
		}
		ref = el.ElementRef
	}
	if ref.BackendNodeID == 0 {
		return ref, nil, fmt.Errorf("%w: element %d has no node id", ErrElementNotFound, t.Index)
	}
	cs, err := s.SessionFor(ref)
	if err != nil {
		return ref, nil, err
	}
	return ref, cs, nil
}
