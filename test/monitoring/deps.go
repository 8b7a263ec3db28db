package monitoring

import (
	_ "github.com/prometheus/prometheus/model/rulefmt"
	_ "github.com/prometheus/prometheus/promql"
	_ "github.com/prometheus/prometheus/promql/parser"
	_ "github.com/prometheus/prometheus/promql/promqltest"
	_ "github.com/prometheus/prometheus/tsdb"
	_ "github.com/prometheus/prometheus/model/textparse"
	_ "gonum.org/v1/plot"
)
