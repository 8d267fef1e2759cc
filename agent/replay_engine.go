package agent

import "context"

func replay(ctx context.Context, b Browser, h *History, opt ReplayOptions) (*ReplayResult, error) {
	if _, _, err := compile(h, opt); err != nil {
		return nil, err
	}
	return nil, ErrReplayNeedsModel // the engine lands in the next commit
}
