// Package recommender is the verticalscaler's own producer: the usage poller (UsageProducer)
// reads the usage of the Pods of every Deployment a VerticalScaler names, keeps it in decaying
// histograms per container (ContainerHistory, with the Vertical Pod Autoscaler's constants), and
// turns it into recommendations. It writes each VerticalScaler's history to a
// VerticalScalerCheckpoint (compact: checkpoint.go), and reads it back when it has none in
// memory, after a restart or a leader change. It puts its news in Reports and sends the VerticalScaler's key
// through the channel-source registry of package sources, which it registers with through the
// verticalscaler's row of the controller table.
package recommender
