// Package leader elects, among the agent's replicas, the one that pushes.
//
// Every replica watches and keeps its series maps current (a warm standby);
// an Election takes part in client-go's leader election on one
// coordination.k8s.io Lease, and Leading tells whether this replica holds
// it. The agent asks between snapshots and sends a snapshot only while it
// leads; on stop, Run's end releases the Lease so that the next replica
// takes over at once rather than after lease_duration.
package leader
