// Package faults has no code: its tests inject the faults an agent run
// meets in the field — the browser killed mid-step or mid-navigation, the
// websocket dropped or stalled, a page that never yields or loops on
// dialogs, a watchdog that ignores cancellation on Stop — into real runs on
// browsers of their own, and check that each ends within its bound, with a
// named error, leaving no goroutine, process, profile or temp entry behind.
// docs/reliability.md lists the promises and the figures measured here.
//
// FAULTS_LOG=1 go test -v ./internal/faults logs each session at debug
// level (every CDP message), to see what a failing fault test went through.
package faults
