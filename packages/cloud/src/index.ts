/** svc-cloud: the service's public surface. */
export {};
