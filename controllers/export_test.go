package controllers

// CountByNamespace is the shard group's weighing of one kind, for the tests of package
// controllers_test that run it against the API server.
var CountByNamespace = countByNamespace
