// Package verticalscaler is the verticalscaler controller: a VerticalScaler names a Deployment
// in its namespace (spec.deploymentName) that it does not own, and the controller reports in the
// VerticalScaler's status whether that Deployment exists.
//
// Watches: VerticalScaler (primary), and Deployments, mapped back to the VerticalScalers that
// name them through the shared index indexers.VerticalScalerByDeploymentName: an in-memory
// lookup on the cache, no owner reference and no annotation on the Deployment. Deleting a
// VerticalScaler never touches its Deployment.
package verticalscaler
