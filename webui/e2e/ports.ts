/**
 * Where the e2e APIs listen (FULCRUM_E2E_PORT, FULCRUM_E2E_PEER_PORT: set them when others run
 * the suite on this machine too), and the notify FIFO of the first one, through which a test
 * reports a VRRP state as keepalived would (no keepalived runs on this host).
 */
export const A_PORT = Number(process.env.FULCRUM_E2E_PORT ?? 8124);
export const B_PORT = Number(process.env.FULCRUM_E2E_PEER_PORT ?? 8125);
export const A_NOTIFY_FIFO = `/tmp/fulcrum-e2e-${A_PORT}.notify`;
/** The journal directory the first API reads for System → Logs: the Logs spec writes it. */
export const A_JOURNAL_DIR = `/tmp/fulcrum-e2e-${A_PORT}-journal`;
