package events

// SaveStorageStateEvent asks to save cookies and local storage to Path
// ("" = the watchdog's configured path). Dispatched by embedders (the
// storage-state watchdog also saves on BrowserStop by itself); handled by
// the storage-state watchdog, which emits StorageStateSaved.
type SaveStorageStateEvent struct {
	Path string
}

// StorageStateResult is what was written or read.
type StorageStateResult struct {
	Path    string
	Cookies int
	Origins int
}

// SaveStorageState saves state (45 s).
var SaveStorageState = def[SaveStorageStateEvent, StorageStateResult]("SaveStorageState", 45*sec)

// LoadStorageStateEvent asks to load cookies and local storage from Path
// ("" = the watchdog's configured path). Dispatched by embedders (the
// storage-state watchdog loads its configured file on BrowserConnected by
// itself); handled by the storage-state watchdog, which emits
// StorageStateLoaded.
type LoadStorageStateEvent struct {
	Path string
}

// LoadStorageState loads state (45 s).
var LoadStorageState = def[LoadStorageStateEvent, StorageStateResult]("LoadStorageState", 45*sec)

// StorageStateSavedEvent reports a saved state. Emitted by the storage-state
// watchdog.
type StorageStateSavedEvent struct {
	Path    string
	Cookies int
	Origins int
}

// StorageStateSaved reports a save (30 s).
var StorageStateSaved = def[StorageStateSavedEvent, None]("StorageStateSaved", 30*sec)

// StorageStateLoadedEvent reports a loaded state. Emitted by the
// storage-state watchdog.
type StorageStateLoadedEvent struct {
	Path    string
	Cookies int
	Origins int
}

// StorageStateLoaded reports a load (30 s).
var StorageStateLoaded = def[StorageStateLoadedEvent, None]("StorageStateLoaded", 30*sec)
