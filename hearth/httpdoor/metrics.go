package httpdoor

import (
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics serves GET /metrics: the Prometheus text of the registry the
// daemon made (the owner's: metrics read).
func (d *Door) metrics(c *call) error {
	reg := d.o.Metrics.Registry()
	if reg == nil {
		return errNotFound
	}
	sw := &statusWriter{ResponseWriter: c.w}
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slogPrinter{d}}).ServeHTTP(sw, c.r)
	c.status = sw.status
	return nil
}

// slogPrinter is promhttp's error log.
type slogPrinter struct{ d *Door }

func (p slogPrinter) Println(v ...any) { p.d.log.Warn("metrics: gather", "err", v) }
