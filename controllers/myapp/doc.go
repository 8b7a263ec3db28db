// Package myapp is the myapp controller: it turns each MyApp into a Deployment and a Service of
// the same name, owned by the MyApp, and reports their state in the MyApp's status.
//
// Owns: the Deployment and the Service (controller owner references: the garbage collector
// deletes them with the MyApp). Watches: MyApp (spec and deletion changes only; a status-only
// update does not trigger a reconcile), the owned Deployments and Services, and the channel
// sources its table row lists.
//
// Writes: server-side apply under the field manager "myapp", owning only the fields it sets:
// labels, selector, replicas, the container's image, port, env and envFrom, the reload
// annotation when envFrom is used, and the Service's selector and port. It never sends
// container resources (the verticalscaler's) nor the Pod template's config-hash annotation (the
// configmapwatcher's), so the three controllers never undo each other, and fields set by anyone
// else survive. A reconcile that would change nothing sends nothing.
//
// Finalizer: app.example.com/finalizer is set by the API server as the MyApp is created, through
// the myapp component's MutatingAdmissionPolicy (config/components/myapp/finalizer_policy.yaml),
// so that a new MyApp costs no write of its own; the controller adds it to a MyApp that lacks it
// (a cluster without the policy, an OLM install, a hand removal) before anything is created for
// it. Owner references cover the Deployment and the Service; what they do not cover is the
// controller's in-memory state for the MyApp (the record of the last warning Event, kept so
// that a lasting name conflict does not write a new Event on every retry). On delete that state
// is dropped, then the finalizer is removed; nothing on that path waits on anything but the API
// server, so deleting a MyApp never hangs while the controller runs.
//
// With the myapp controller disabled (--controllers=-myapp), or in a namespace it does not watch
// while the policy applies there, nobody removes the finalizer: a deleted MyApp stays
// Terminating until the controller runs again, or until someone removes the finalizer by hand
// (kubectl patch myapp NAME --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]');
// the garbage collector then deletes the Deployment and the Service.
package myapp
