import type { ForwardingChoice } from '../lib/schedulers';
import { FORWARDING } from '../lib/schedulers';

/**
 * Client → load balancer → backend, and the path of the reply: back through the load balancer
 * (NAT, one-arm) or straight to the client (DR, TUN).
 */
export function ForwardingDiagram({ method }: { method: ForwardingChoice }) {
  const info = FORWARDING.find((f) => f.value === method)!;
  const request = { nat: 'dst → backend', one_arm: 'src → LB, dst → backend', dr: 'MAC → backend', tun: 'wrapped in tunnel' }[method];
  const reply = info.repliesViaBalancer ? 'reply via LB' : 'reply direct to client';
  const box = (x: number, label: string) => (
    <g>
      <rect x={x} y={28} width={84} height={30} rx={4} fill="var(--mantine-color-body)" stroke="currentColor" />
      <text x={x + 42} y={47} textAnchor="middle" fontSize={12} fill="currentColor">
        {label}
      </text>
    </g>
  );
  return (
    <svg viewBox="0 0 340 100" width="100%" style={{ maxWidth: 340 }} role="img" aria-label={`${info.name}: request through the load balancer, ${reply}`}>
      <defs>
        <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse">
          <path d="M0,0 L10,5 L0,10 z" fill="currentColor" />
        </marker>
      </defs>
      {box(4, 'Client')}
      {box(128, 'Fulcrum')}
      {box(252, 'Backend')}
      <line x1={88} y1={38} x2={126} y2={38} stroke="var(--mantine-color-blue-6)" strokeWidth={2} markerEnd="url(#arrow)" />
      <line x1={212} y1={38} x2={250} y2={38} stroke="var(--mantine-color-blue-6)" strokeWidth={2} markerEnd="url(#arrow)" />
      <text x={231} y={20} textAnchor="middle" fontSize={10} fill="var(--mantine-color-blue-6)">
        {request}
      </text>
      {info.repliesViaBalancer ? (
        <>
          <line x1={250} y1={50} x2={214} y2={50} stroke="var(--mantine-color-green-7)" strokeWidth={2} markerEnd="url(#arrow)" />
          <line x1={126} y1={50} x2={90} y2={50} stroke="var(--mantine-color-green-7)" strokeWidth={2} markerEnd="url(#arrow)" />
        </>
      ) : (
        <path d="M294,58 C294,92 46,92 46,60" fill="none" stroke="var(--mantine-color-green-7)" strokeWidth={2} markerEnd="url(#arrow)" />
      )}
      <text x={170} y={info.repliesViaBalancer ? 76 : 96} textAnchor="middle" fontSize={10} fill="var(--mantine-color-green-7)">
        {reply}
      </text>
    </svg>
  );
}
