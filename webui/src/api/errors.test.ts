import { ApiError, fieldErrors, isStandbyRefusal } from './errors';

describe('fieldErrors', () => {
  it('maps a field location to a dotted form path', () => {
    const errors = fieldErrors([
      { loc: ['body', 'backends', 1, 'address'], msg: "Value error, '300.1.1.1' is not a valid IPv4 or IPv6 address" },
      { loc: ['body', 'ports', 0], msg: 'Input should be greater than or equal to 1' },
    ]);
    expect(errors).toEqual({
      'backends.1.address': "'300.1.1.1' is not a valid IPv4 or IPv6 address",
      'ports.0': 'Input should be greater than or equal to 1',
    });
  });

  it('uses the field a model-level rule names in its message', () => {
    expect(fieldErrors([{ loc: ['body'], msg: 'Value error, backends[0].address: backend 198.51.100.1:80 is listed twice' }])).toEqual({
      'backends.0.address': 'backend 198.51.100.1:80 is listed twice',
    });
    expect(fieldErrors([{ loc: ['body', 'health_check'], msg: 'Value error, http_digest: applies only to http and https checks' }])).toEqual({
      'health_check.http_digest': 'applies only to http and https checks',
    });
  });

  it('keeps a message whose field the form does not show, under the form-level key', () => {
    const errors = fieldErrors([{ loc: ['body', 'fwmark'], msg: 'x' }], (path) => path !== 'fwmark');
    expect(errors).toEqual({ '': 'x' });
  });

  it('joins two messages for the same field', () => {
    expect(fieldErrors([{ loc: ['body', 'name'], msg: 'a' }, { loc: ['body', 'name'], msg: 'b' }])).toEqual({ name: 'a; b' });
  });
});

describe('ApiError', () => {
  it('carries a plain detail as its message', () => {
    const error = new ApiError(409, { detail: 'nothing to commit' });
    expect(error.message).toBe('nothing to commit');
    expect(error.issues).toEqual([]);
  });

  it('summarises validation issues', () => {
    const error = new ApiError(422, { detail: [{ loc: ['body', 'weight'], msg: 'Input should be less than or equal to 65535' }] });
    expect(error.issues).toHaveLength(1);
    expect(error.message).toBe('Input should be less than or equal to 65535');
  });
});

describe('a standby refusal', () => {
  it('is recognised by its code and keeps where to edit instead', () => {
    const error = new ApiError(409, {
      detail: 'this node is standby; make changes on the active node lb1 at https://10.0.0.1',
      code: 'standby_read_only',
      active_url: 'https://10.0.0.1',
    });
    expect(isStandbyRefusal(error)).toBe(true);
    expect(error.activeUrl).toBe('https://10.0.0.1');
    expect(error.message).toBe('this node is standby; make changes on the active node lb1 at https://10.0.0.1');
  });
  it('is not any other conflict', () => {
    expect(isStandbyRefusal(new ApiError(409, { detail: 'username taken' }))).toBe(false);
    expect(isStandbyRefusal(new Error('x'))).toBe(false);
  });
});
