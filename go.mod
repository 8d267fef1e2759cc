module github.com/browseragent/browseragent

go 1.26

require (
	github.com/chromedp/cdproto v0.160.2
	github.com/gorilla/websocket v1.5.3
	go.uber.org/goleak v1.3.0
	go.uber.org/zap v1.28.0
)

require (
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	go.uber.org/multierr v1.10.0 // indirect
)
