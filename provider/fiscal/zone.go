package fiscal

import (
	"time"
	_ "time/tzdata" // the zone database, so every image knows America/Montevideo
)

// Montevideo is Uruguay's time zone, in which CFEs are dated and DGI's
// calendar days begin and end. It is loaded from the embedded zone database,
// so it holds in a distroless image too.
var Montevideo = mustLoad("America/Montevideo")

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic("fiscal: time zone " + name + ": " + err.Error())
	}
	return loc
}
