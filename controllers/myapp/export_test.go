package myapp

// The benchmark's protocol floor applies exactly what the controller applies.
var (
	DesiredDeployment = desiredDeployment
	DesiredService    = desiredService
)
