// Jobs, events and the APNs/FCM payload builders: pure types, no I/O.
