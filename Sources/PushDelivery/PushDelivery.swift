// Delivery to APNs and FCM over HTTP/2 (libcurl).
