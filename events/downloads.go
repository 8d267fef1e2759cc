package events

// DownloadStartedEvent reports a download the browser began. Emitted by the
// downloads watchdog (Browser.downloadWillBegin); for observers and the
// trace. (An action learns of its download from CDP directly: verdict
// "download".)
type DownloadStartedEvent struct {
	GUID              string
	URL               string
	SuggestedFilename string
	AutoDownload      bool // started by the runtime (PDF auto-download), not the page
}

// DownloadStarted reports a download start (5 s).
var DownloadStarted = def[DownloadStartedEvent, None]("DownloadStarted", 5*sec)

// DownloadProgressEvent reports download progress. Emitted by the downloads
// watchdog (Browser.downloadProgress).
type DownloadProgressEvent struct {
	GUID          string
	ReceivedBytes int64
	TotalBytes    int64
	State         string // inProgress, completed, canceled
}

// DownloadProgress reports progress (5 s).
var DownloadProgress = def[DownloadProgressEvent, None]("DownloadProgress", 5*sec)

// FileDownloadedEvent reports a finished download on disk. Emitted by the
// downloads watchdog once the file has its final name; for observers and
// the trace.
type FileDownloadedEvent struct {
	GUID         string
	URL          string
	Path         string
	FileName     string
	Size         int64
	FileType     string
	MIMEType     string
	AutoDownload bool
}

// FileDownloaded reports a finished download (30 s).
var FileDownloaded = def[FileDownloadedEvent, None]("FileDownloaded", 30*sec)
