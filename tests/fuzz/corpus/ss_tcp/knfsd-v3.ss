State Recv-Q Send-Q Local Address:Port Peer Address:PortProcess                                            
ESTAB 0      0         192.0.2.10:720     192.0.2.2:2049 rto:0.2 ato:0.04 qack:9 bidir cwnd:10 reordering:0
ESTAB 0      0      198.51.100.10:873  198.51.100.2:2049 rto:0.2 ato:0.04 qack:9 bidir cwnd:10 reordering:0
