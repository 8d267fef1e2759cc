package events

// Point is a point in the CSS pixels of the focused tab's viewport.
type Point struct {
	X, Y float64
}

// DragEvent asks to drag with the mouse: press at the start, move in steps,
// release at the end. The start is the element From names (its visible
// centre) or, when From is zero, FromPoint; the end is the element To
// names or, when To is zero, the start moved by (DX, DY). An element that
// starts an HTML5 drag (draggable=true, a dragstart listener) gets the
// drag events a person's drag delivers (dragstart, dragenter, dragover,
// drop, dragend with a DataTransfer); any other gets only the mouse and
// pointer events, which is what mouse-driven sliders and sortable lists
// listen to. Emitted by the agent's drag action; handled by the actions
// watchdog.
type DragEvent struct {
	From      Target
	FromPoint *Point
	To        Target
	DX, DY    float64
	// Steps is the number of pointer moves between start and end
	// (libraries wait for a few before they call it a drag); 0 means
	// DefaultDragSteps.
	Steps int
}

// DefaultDragSteps is DragEvent.Steps' default.
const DefaultDragSteps = 12

// DragResult is where the drag went and how.
type DragResult struct {
	Outcome ActionOutcome
	// From and To are the points pressed and released, in the CSS pixels
	// of the viewport of the elements' frame target (as ClickResult's X, Y).
	From, To Point
	// Method is "html5" when the page started an HTML5 drag (the drop was
	// delivered as drag events), else "mouse".
	Method string
}

// Drag drags (20 s). Its chain stops at the first error.
var Drag = guard[DragEvent, DragResult]("Drag", 20*sec)

// ScrollCoordinateEvent asks to turn the mouse wheel at a point of the
// focused tab's viewport (CSS pixels), so that whatever scrolls under it
// (a map, a canvas list, an inner scroll box, else the page) scrolls by
// (DX, DY) pixels. Emitted by the agent's scroll action when coordinates
// are offered; handled by the actions watchdog.
type ScrollCoordinateEvent struct {
	X, Y   float64
	DX, DY float64
}

// ScrollCoordinate scrolls at a point (8 s). Its chain stops at the first
// error.
var ScrollCoordinate = guard[ScrollCoordinateEvent, ScrollResult]("ScrollCoordinate", 8*sec)
